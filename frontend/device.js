// The device panel: what ran, its peaks and where they came from, ridge points,
// diagnostics and notes, in plain words.

import {el} from './dom.js';
import {
  byteRate,
  counted,
  duration,
  flopRate,
  namesPhrase,
  num,
  readableMessage,
} from './format.js';
import {mainMemory} from './model.js';

const CORE_WORD = {TPU: 'TensorCore', GPU: 'GPU', CPU: 'CPU core'}; // singular; plural + s
const MAX_MESSAGES = 8; // per kind; the rest are counted, not listed

/** Where the peaks came from, in words. */
export function peaksSourceText(source) {
  if (!source || source === 'none')
    return 'none known: the profile carries none (choose Device peaks in the sidebar)';
  if (source === 'profile') return "the profile (the device's capability stats)";
  return source;
}

/** What one core is called: the server's word (json `device.core_unit`), else ours. */
const coreWord = (device) => device.core_unit || CORE_WORD[device.hardware_type] || 'core';

/**
 * What every time is: device time, summed over the cores when there are several (the
 * server's words, json `device.time_meaning`, as the summary and Compare say them).
 */
export function deviceTimeText(device) {
  if (device.time_meaning) return device.time_meaning;
  const count = device.device_core_count ?? 0;
  if (count <= 1) return 'device time';
  return `device time summed over ${counted(count, coreWord(device))}`;
}

function coresText(device) {
  const total = device.device_core_count ?? 0;
  const active = device.active_core_count ?? total;
  const activeText = active === total ? `all with ops` : `${active} with ops`;
  return `${counted(total, coreWord(device))} (${activeText})`;
}

function facts(items) {
  return el(
    'dl',
    {class: 'facts'},
    items.map(([term, value]) => [el('dt', {text: term}), el('dd', {}, value)]),
  );
}

/** The header row of a peaks table. */
function peaksHead() {
  return el(
    'thead',
    {},
    el(
      'tr',
      {},
      el('th', {scope: 'col', text: 'Peak'}),
      el('th', {scope: 'col', class: 'num', text: 'Value'}),
      el('th', {scope: 'col', text: ''}),
    ),
  );
}

function unknownPeaksTable(device) {
  const row = (name, what) =>
    el(
      'tr',
      {},
      el('th', {scope: 'row', text: name}),
      el('td', {class: 'num', text: 'unknown'}),
      el('td', {text: what}),
    );
  return el(
    'table',
    {class: 'peaks', 'data-peaks': 'unknown'},
    el('caption', {class: 'sr-only', text: 'Device peaks (none known)'}),
    peaksHead(),
    el(
      'tbody',
      {},
      row('compute', 'not in the profile: no compute roof'),
      row(mainMemory(device), 'not in the profile: no memory roof'),
    ),
  );
}

function peaksTable(device, memoryNotes) {
  if (
    device.peaks_known === false ||
    (!(device.peak_flop_rate_gflops > 0) && !(device.memories || []).length)
  ) {
    return unknownPeaksTable(device);
  }
  const compute = Object.entries(device.dtype_peak_gflops || {}).sort((a, b) => b[1] - a[1]);
  if (!compute.length) compute.push(['all dtypes', device.peak_flop_rate_gflops || 0]);
  const rows = compute.map(([dtype, gflops]) =>
    el(
      'tr',
      {},
      el('th', {scope: 'row', text: `${dtype} compute`}),
      el('td', {class: 'num', text: flopRate(gflops)}),
      el('td', {text: gflops === device.peak_flop_rate_gflops ? 'the peak the table uses' : ''}),
    ),
  );
  for (const m of device.memories || []) {
    const note = memoryNotes.get(m.name);
    rows.push(
      el(
        'tr',
        {},
        el('th', {scope: 'row', text: m.name}),
        el('td', {class: 'num', text: byteRate(m.peak_gbps)}),
        el('td', {text: `ridge point ${num(m.ridge_point)} FLOP/byte${note ? ` · ${note}` : ''}`}),
      ),
    );
  }
  return el(
    'table',
    {class: 'peaks'},
    el('caption', {class: 'sr-only', text: 'Device peaks'}),
    peaksHead(),
    el('tbody', {}, rows),
  );
}

/**
 * Diagnostics and notes, readable at any size: each message kept short (long number lists
 * summarised), at most MAX_MESSAGES of a kind, the rest counted.
 */
function messages(diagnostics, notes, unattributed) {
  const list = el('ul', {class: 'messages'});
  const add = (kind, word, items) => {
    const all = items || [];
    for (const text of all.slice(0, MAX_MESSAGES))
      list.append(
        el('li', {class: kind}, el('strong', {text: `${word}: `}), readableMessage(text)),
      );
    if (all.length > MAX_MESSAGES) {
      list.append(
        el(
          'li',
          {class: kind, 'data-note': 'more-messages'},
          el('strong', {text: `${word}: `}),
          `… and ${num(all.length - MAX_MESSAGES)} more (all of them in the JSON of the data route).`,
        ),
      );
    }
  };
  add('error', 'Error', diagnostics.errors);
  add('warning', 'Warning', diagnostics.warnings);
  add('info', 'Note', diagnostics.info);
  add('info', 'Note', notes);
  for (const [copies, one, many] of [
    [false, 'GPU kernel not attributed to any op', 'GPU kernels not attributed to any op'],
    [true, 'GPU memory copy or set', 'GPU memory copies and sets'],
  ]) {
    const mine = (unattributed || []).filter((k) => (k.category === 'memory copy') === copies);
    if (!mine.length) continue;
    const time = mine.reduce((sum, k) => sum + (k.total_time_us || 0), 0);
    const count = mine.reduce((sum, k) => sum + (k.occurrences || 0), 0);
    const names = mine
      .slice(0, 4)
      .map((k) => `${k.name} (${k.occurrences}×, ${duration(k.total_time_us)})`)
      .join(', ');
    list.append(
      el(
        'li',
        {class: 'info'},
        el('strong', {text: 'Note: '}),
        readableMessage(
          `${num(count)} ${count === 1 ? one : many} (${duration(time)}) ${count === 1 ? 'counts' : 'count'} in device time and ${count === 1 ? 'is' : 'are'} not in the table: ${names}${mine.length > 4 ? ', …' : ''}`,
        ),
      ),
    );
  }
  return list.children.length ? list : null;
}

/** The peaks the roofline uses, in a few words: "459 TFLOP/s, HBM 2.765 TB/s". */
function peaksUsedText(device) {
  const memory = (device.memories || []).find((m) => m.peak_gbps > 0);
  const compute = device.peak_flop_rate_gflops > 0 ? flopRate(device.peak_flop_rate_gflops) : '';
  if (device.peaks_known === false || (!compute && !memory)) return 'no peaks known';
  return [compute, memory ? `${memory.name} ${byteRate(memory.peak_gbps)}` : '']
    .filter(Boolean)
    .join(', ');
}

/** The first error, else the first warning, of the diagnostics: [kind, text] or null. */
function firstWarning(diagnostics) {
  for (const kind of ['errors', 'warnings']) {
    const text = (diagnostics[kind] || [])[0];
    if (text) return [kind === 'errors' ? 'error' : 'warning', readableMessage(text)];
  }
  return null;
}

/**
 * memoryNotes: Map of memory name -> note (e.g. "no byte counts in profile"). Folded to one
 * line (the device, the peaks used, the first warning) that opens on click, so the answer and
 * the chart come first.
 */
export function devicePanel(data, memoryNotes = new Map()) {
  const device = data.device || {};
  const database = data.database || {};
  const hosts = data.hosts || [];
  const warning = firstWarning(database.diagnostics || {});
  return el(
    'details',
    {class: 'panel device'},
    el(
      'summary',
      {title: 'Device, peaks and notes: click to open'},
      el('span', {
        class: 'panel-title',
        title: device.device_type || null,
        text: device.device_type || 'Unknown device',
      }),
      el('span', {class: 'muted sep', text: coresText(device)}),
      el('span', {class: 'peaks-used sep', text: `peaks ${peaksUsedText(device)}`}),
      warning
        ? el('span', {
            class: `first-warning sep ${warning[0]}`,
            title: warning[1],
            text: warning[1],
          })
        : null,
    ),
    el(
      'div',
      {class: 'device-body'},
      facts([
        [
          'Device',
          `${device.device_type || 'unknown'} (${device.hardware_type || 'unknown kind'})`,
        ],
        ['Cores', coresText(device)],
        ['Hosts', hosts.length ? namesPhrase(hosts) : '—'],
        ['Peaks from', peaksSourceText(device.peaks_source)],
      ]),
      peaksTable(device, memoryNotes),
    ),
    messages(database.diagnostics || {}, data.notes, data.unattributed_kernels),
  );
}
