// Choosing the peaks a profile is judged by (the `peaks` parameter of the API): the
// profile's own, this machine's measurement (`calibrate`, run on the server on request) or a
// built-in device; and the note shown instead of roofs when no peaks are known.

import {el} from './dom.js';
import {byteRate, flopRate} from './format.js';

export const CALIBRATED = 'calibrated';

/** The values a `peaks` choice may take now: '' and, when offered, calibrated and built-ins. */
export function validPeaks(choices) {
  const values = [''];
  if (choices && choices.calibration && choices.calibration.available) values.push(CALIBRATED);
  for (const d of (choices && choices.builtin) || []) values.push(d.key);
  return values;
}

/** A <select> of the choices; onChange(value) reports a new one. */
export function peaksSelect(id, choices, value, onChange) {
  const control = el('select', {id});
  const option = (optionValue, text) => {
    const item = el('option', {value: optionValue, text});
    if (optionValue === value) item.selected = true;
    return item;
  };
  control.append(
    option(
      '',
      choices && choices.server_peaks ? "The server's (--roofline_peaks)" : "The profile's own",
    ),
  );
  if (choices && choices.calibration && choices.calibration.available)
    control.append(option(CALIBRATED, 'This machine (measured)'));
  const groups = new Map();
  for (const d of (choices && choices.builtin) || []) {
    if (!groups.has(d.vendor))
      groups.set(d.vendor, el('optgroup', {label: `Built-in: ${d.vendor}`}));
    groups.get(d.vendor).append(option(d.key, d.name));
  }
  control.append(...groups.values());
  control.addEventListener('change', () => onChange(control.value));
  return control;
}

/** A labelled peaks select for the sidebar. */
export function peaksField(choices, value, onChange) {
  return el(
    'label',
    {class: 'field'},
    el('span', {class: 'field-label', text: 'Device peaks'}),
    peaksSelect('peaks-select', choices, value, onChange),
  );
}

/** The measured figures in words: "fp32 1.2 TFLOP/s, fp64 600 GFLOP/s; memory 20 GB/s". */
export function measuredText(peaks) {
  if (!peaks) return '';
  const compute = Object.entries(peaks.dtype_tflops || {}).map(
    ([dtype, tflops]) => `${dtype} ${flopRate(1000 * tflops)}`,
  );
  return `${compute.join(', ')}; memory ${byteRate(peaks.memory_gbps || 0)}`;
}

/** The calibration's part of the note: a button to measure (or use the measurement) and its state. */
function calibrationPart(calibration, value, {onChoose, onCalibrate}) {
  const state = (calibration && calibration.state) || 'idle';
  const parts = [];
  if (calibration && calibration.disabled) {
    parts.push(
      el('span', {
        class: 'muted',
        'data-note': 'calibration-off',
        text: `Measuring this machine is off: ${calibration.disabled}`,
      }),
    );
    return parts;
  }
  if (state === 'running') {
    const seconds = calibration.running_s ? ` (${Math.round(calibration.running_s)} s)` : '';
    parts.push(
      el('button', {
        type: 'button',
        id: 'calibrate-button',
        disabled: true,
        text: `Measuring this machine…${seconds}`,
      }),
    );
  } else if (calibration && calibration.available && value !== CALIBRATED) {
    parts.push(
      el('button', {
        type: 'button',
        id: 'use-calibration',
        onclick: () => onChoose(CALIBRATED),
        text: "Use this machine's measured peaks",
      }),
      el('span', {class: 'muted', text: ` ${measuredText(calibration.peaks)}`}),
    );
  } else {
    parts.push(
      el('button', {
        type: 'button',
        id: 'calibrate-button',
        onclick: () => onCalibrate(),
        text: 'Measure this machine',
      }),
      el('span', {
        class: 'muted',
        text: ' runs `tb-roofline calibrate` on the TensorBoard server (about 10 s)',
      }),
    );
  }
  if (state === 'failed' && calibration.error) {
    parts.push(
      el('span', {
        class: 'warning',
        role: 'alert',
        'data-note': 'calibration-error',
        text: ` The last measurement failed: ${calibration.error}`,
      }),
    );
  }
  return parts;
}

/**
 * The note in place of roofs: why there are none, how ops are placed instead, and what draws
 * roofs. memory: the main memory's name; choices: the `peaks` route's answer (or null);
 * value: the current choice; on: {onChoose(value), onCalibrate()}.
 */
export function noRoofsNote({memory, choices, value, on}) {
  return el(
    'div',
    {class: 'no-roofs', 'data-note': 'no-roofs', role: 'note'},
    el(
      'p',
      {class: 'no-roofs-title'},
      el('strong', {text: 'No roofs: no device peaks are known for this profile'}),
      ' (CPU profiles carry none).',
    ),
    el('p', {
      text:
        'Every op with FLOPs and bytes is still placed: by its operational intensity (FLOPs per byte accessed) and its FLOP rate. ' +
        `Bound, roofline efficiency and wasted time need the peak FLOP/s and ${memory} bandwidth. To draw roofs:`,
    }),
    el(
      'div',
      {class: 'no-roofs-actions'},
      calibrationPart(choices && choices.calibration, value, on),
      el(
        'label',
        {class: 'inline-field'},
        el('span', {text: 'or judge by a device: '}),
        peaksSelect('note-peaks-select', choices, value, on.onChoose),
      ),
    ),
    el('p', {
      class: 'muted',
      text: "This machine's figures describe the TensorBoard server, not necessarily the machine that recorded the profile.",
    }),
  );
}
