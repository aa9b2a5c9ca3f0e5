// DOM building helpers and the views of the shell. Profile strings are always set as
// text (textContent), never parsed as HTML.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function select(label, id, options, value, onChange) {
  const control = el('select', {id, 'aria-label': label});
  for (const option of options) {
    const [optionValue, text] = Array.isArray(option) ? option : [option, option];
    const item = el('option', {value: optionValue, text});
    if (String(optionValue) === String(value)) item.selected = true;
    control.append(item);
  }
  control.addEventListener('change', () => onChange(control.value));
  return el('label', {class: 'field'}, el('span', {text: label}), control);
}

const number = new Intl.NumberFormat('en-US', {maximumSignificantDigits: 4});

export function formatNumber(value) {
  if (typeof value !== 'number') return String(value ?? '');
  if (value === 0) return '0';
  return number.format(value);
}

export function deviceSummary(device, diagnostics) {
  const peaks = el('ul', {class: 'peaks'});
  peaks.append(
    el('li', {text: `Peak compute: ${formatNumber(device.peak_flop_rate_gflops)} GFLOP/s per core`}),
  );
  for (const memory of device.memories) {
    peaks.append(
      el('li', {
        text: `${memory.name}: ${formatNumber(memory.peak_gbps)} GB/s, ridge point ` +
          `${formatNumber(memory.ridge_point)} FLOP/byte`,
      }),
    );
  }
  const box = el(
    'section',
    {class: 'device', 'aria-label': 'Device'},
    el('h2', {text: device.device_type || 'Unknown device'}),
    el('p', {
      text: `${device.hardware_type}, ${device.device_core_count} cores ` +
        `(${device.active_core_count} with ops); peaks from ${device.peaks_source}`,
    }),
    peaks,
  );
  for (const [severity, messages] of [
    ['Info', diagnostics.info || []],
    ['Warning', diagnostics.warnings || []],
    ['Error', diagnostics.errors || []],
  ]) {
    for (const message of messages) {
      box.append(el('p', {class: `diagnostic ${severity.toLowerCase()}`, text: `${severity}: ${message}`}));
    }
  }
  return box;
}

const COLUMNS = [
  ['rank', 'Rank'],
  ['hlo_name', 'Operation'],
  ['hlo_category', 'Category'],
  ['total_time_in_us', 'Total time (µs)'],
  ['total_self_time_as_fraction', 'Self time (%)'],
  ['measured_flop_rate', 'GFLOP/s'],
  ['hbm_bw', 'HBM GiB/s'],
  ['bottleneck_operational_intensity', 'OI (FLOP/B)'],
  ['bound_by', 'Bound by'],
  ['roofline_efficiency', 'Roofline eff. (%)'],
];
const PERCENT = new Set(['total_self_time_as_fraction', 'roofline_efficiency']);

export function recordTable(records) {
  if (!records.length) return el('p', {class: 'empty', text: 'This selection has no records.'});
  const head = el('tr', {}, ...COLUMNS.map(([, label]) => el('th', {scope: 'col', text: label})));
  const body = el('tbody');
  for (const record of records) {
    body.append(
      el(
        'tr',
        {},
        ...COLUMNS.map(([key]) => {
          let value = record[key] ?? 0;
          if (PERCENT.has(key)) value = 100 * value;
          return el('td', {class: typeof value === 'number' ? 'num' : '', text: formatNumber(value)});
        }),
      ),
    );
  }
  return el('table', {class: 'records'}, el('thead', {}, head), body);
}
