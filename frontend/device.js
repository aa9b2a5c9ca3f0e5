// The device panel: what ran, its peaks and where they came from, ridge points,
// diagnostics and notes, in plain words.

import {el} from './dom.js';
import {byteRate, duration, flopRate, num} from './format.js';

const CORE_WORD = {TPU: 'TensorCores', GPU: 'GPUs', CPU: 'CPU cores'};

/** Where the peaks came from, in words. */
export function peaksSourceText(source) {
  if (!source || source === 'none') return 'unknown: the profile has none (start TensorBoard with --roofline_peaks)';
  if (source === 'profile') return "the profile (the device's capability stats)";
  return source;
}

function coresText(device) {
  const word = CORE_WORD[device.hardware_type] || 'cores';
  const total = device.device_core_count ?? 0;
  const active = device.active_core_count ?? total;
  const activeText = active === total ? `all with ops` : `${active} with ops`;
  return `${total} ${word} (${activeText})`;
}

function facts(items) {
  return el('dl', {class: 'facts'}, items.map(([term, value]) => [el('dt', {text: term}), el('dd', {}, value)]));
}

function peaksTable(device, memoryNotes) {
  const compute = Object.entries(device.dtype_peak_gflops || {}).sort((a, b) => b[1] - a[1]);
  if (!compute.length) compute.push(['all dtypes', device.peak_flop_rate_gflops || 0]);
  const rows = compute.map(([dtype, gflops]) =>
    el('tr', {}, el('th', {scope: 'row', text: `${dtype} compute`}), el('td', {class: 'num', text: flopRate(gflops)}), el('td', {text: gflops === device.peak_flop_rate_gflops ? 'the peak the table uses' : ''})),
  );
  for (const m of device.memories || []) {
    const note = memoryNotes.get(m.name);
    rows.push(
      el(
        'tr', {},
        el('th', {scope: 'row', text: m.name}),
        el('td', {class: 'num', text: byteRate(m.peak_gbps)}),
        el('td', {text: `ridge point ${num(m.ridge_point)} FLOP/byte${note ? ` · ${note}` : ''}`}),
      ),
    );
  }
  return el(
    'table', {class: 'peaks'},
    el('caption', {class: 'sr-only', text: 'Device peaks'}),
    el('thead', {}, el('tr', {}, el('th', {scope: 'col', text: 'Peak'}), el('th', {scope: 'col', class: 'num', text: 'Value'}), el('th', {scope: 'col', text: ''}))),
    el('tbody', {}, rows),
  );
}

function messages(diagnostics, notes, unattributed) {
  const list = el('ul', {class: 'messages'});
  for (const [kind, word, items] of [
    ['error', 'Error', diagnostics.errors], ['warning', 'Warning', diagnostics.warnings], ['info', 'Note', diagnostics.info],
  ]) {
    for (const text of items || []) list.append(el('li', {class: kind}, el('strong', {text: `${word}: `}), text));
  }
  for (const text of notes || []) list.append(el('li', {class: 'info'}, el('strong', {text: 'Note: '}), text));
  if (unattributed && unattributed.length) {
    const time = unattributed.reduce((sum, k) => sum + (k.total_time_us || 0), 0);
    const names = unattributed.slice(0, 4).map((k) => `${k.name} (${k.occurrences}×, ${duration(k.total_time_us)})`).join(', ');
    list.append(
      el('li', {class: 'info'}, el('strong', {text: 'Note: '}),
        `${unattributed.length} GPU kernel(s) without an HLO op (${duration(time)}) are not in the table: ${names}${unattributed.length > 4 ? ', …' : ''}`),
    );
  }
  return list.children.length ? list : null;
}

/** memoryNotes: Map of memory name -> note (e.g. "no byte counts in profile"). */
export function devicePanel(data, memoryNotes = new Map()) {
  const device = data.device || {};
  const database = data.database || {};
  const hosts = data.hosts || [];
  return el(
    'details', {class: 'panel device', open: true},
    el('summary', {}, el('span', {class: 'panel-title', text: device.device_type || 'Unknown device'}), el('span', {class: 'muted', text: ` · ${coresText(device)}`})),
    el(
      'div', {class: 'device-body'},
      facts([
        ['Device', `${device.device_type || 'unknown'} (${device.hardware_type || 'unknown kind'})`],
        ['Cores', coresText(device)],
        ['Hosts', hosts.length ? hosts.join(', ') : '—'],
        ['Peaks from', peaksSourceText(device.peaks_source)],
      ]),
      peaksTable(device, memoryNotes),
    ),
    messages(database.diagnostics || {}, data.notes, data.unattributed_kernels),
  );
}
