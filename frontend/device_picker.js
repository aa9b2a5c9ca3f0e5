// The Device picker: one device of a host with several (XLA:CPU devices, GPUs, TensorCores)
// or all of them (the default: their times summed), the API's `device`. Shown only when the
// host's `devices` (the steps route's list of devices that ran ops) has more than one.

import {el} from './dom.js';

export const ALL_DEVICES = 'all';

/** The choices: [value, text] pairs, "All 4 devices" first, then "Device 0", ... */
export function deviceOptions(devices) {
  const list = devices || [];
  return [
    [ALL_DEVICES, `All ${list.length} devices`],
    ...list.map((d) => [String(d), `Device ${d}`]),
  ];
}

/** `value` when it is one of `devices` (or 'all'), else 'all'. */
export function validDevice(devices, value) {
  const text = String(value ?? ALL_DEVICES);
  return (devices || []).some((d) => String(d) === text) ? text : ALL_DEVICES;
}

/** The picker (a labelled select), or null for a host with one device. onChange(value). */
export function devicePicker({id, devices, value, onChange}) {
  if (!devices || devices.length < 2) return null;
  const chosen = validDevice(devices, value);
  const select = el('select', {id});
  for (const [optionValue, text] of deviceOptions(devices))
    select.append(el('option', {value: optionValue, text, selected: optionValue === chosen}));
  select.addEventListener('change', () => onChange(select.value));
  return el(
    'label',
    {class: 'field device-picker'},
    el('span', {class: 'field-label', text: 'Device'}),
    select,
  );
}
