// Total (HW): what hardware counters measured per op beside the cost model (json
// `hardware_counters`, XProf's ALL_HW records), on the Roofline Model view of a profile that
// has counters. A table of measured and modelled FLOPs and bytes with their ratio, and, where
// the ops have device times, a chart of each op measured (◆) beside modelled (○), the pair
// joined by a line. What the counters did not measure is "not measured", never the model's.

import {plot} from './charts.js';
import {el} from './dom.js';
import {escapeHtml as esc, flopRate, num} from './format.js';
import {chartIntensity, opKey, plottable, roofModel} from './model.js';
import {baseLayout, ranges, roofTraces} from './roofs.js';

const G = 1e9;
const NOT_MEASURED = 'not measured';

/** FLOPs or bytes in words: 49.13 GFLOP, 1.2 TB; '—' for none. */
function amount(value, unit) {
  if (value === null || value === undefined) return NOT_MEASURED;
  if (!(value > 0)) return value === 0 ? `0 ${unit}` : '—';
  const prefixes = [
    [1e15, 'P'],
    [1e12, 'T'],
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ];
  for (const [scale, prefix] of prefixes)
    if (value >= scale) return `${num(value / scale)} ${prefix}${unit}`;
  return `${num(value)} ${unit}`;
}

function ratio(value) {
  return value === null || value === undefined ? '—' : `${num(value)}×`;
}

function recordsOf(data, type) {
  return ((data.database || {}).roofline_model_record || []).filter(
    (r) => r.include_infeed_outfeed && (r.record_type || 'ALL') === type,
  );
}

/** Rows of the comparison: the json's ops with their ALL_HW and ALL records (chart points). */
export function hardwareRows(data) {
  const section = data.hardware_counters;
  if (!section) return [];
  const byKey = (records) => new Map(records.map((r) => [opKey(r.hlo_module_id, r.hlo_name), r]));
  const measured = byKey(recordsOf(data, 'ALL_HW'));
  const modelled = byKey(recordsOf(data, 'ALL'));
  const rows = [section.program, ...(section.ops || [])].filter(Boolean);
  return rows.map((op) => {
    const isProgram = op === section.program;
    const key = opKey(op.hlo_module_id, op.hlo_name);
    const find = (records) =>
      isProgram ? [...records.values()].find((r) => Number(r.rank || 0) === 0) : records.get(key);
    return {key, op, isProgram, hw: find(measured) || null, model: find(modelled) || null};
  });
}

function hover(row, which) {
  const r = which === 'hw' ? row.hw : row.model;
  const op = row.op;
  return [
    `<b>${esc(op.hlo_name)}</b> · ${which === 'hw' ? 'measured (Total (HW))' : 'modelled'}`,
    `performance ${esc(flopRate(r.measured_flop_rate || 0))} · intensity ${esc(num(chartIntensity(r)))} FLOP/byte`,
    `FLOPs measured ${esc(amount(op.flops, 'FLOP'))} · modelled ${esc(amount(op.modelled_flops, 'FLOP'))} · ratio ${esc(ratio(op.flops_ratio))}`,
    `bytes measured ${esc(amount(op.bytes_accessed, 'B'))} · modelled ${esc(amount(op.modelled_bytes, 'B'))}`,
  ].join('<br>');
}

/** The chart: each op's measured point beside its modelled one, joined by a line. */
export function hardwareFigure({rows, roofs, colors: c}) {
  // The Program last: a trace's legend shows its first point's symbol.
  const ordered = [...rows.filter((row) => !row.isProgram), ...rows.filter((row) => row.isProgram)];
  const placed = ordered.filter((row) => row.hw && plottable(row.hw));
  const point = (r) => ({x: chartIntensity(r), y: (r.measured_flop_rate || 0) * G});
  const pairs = placed.filter((row) => row.model && plottable(row.model));
  const xy = [...placed.map((row) => point(row.hw)), ...pairs.map((row) => point(row.model))];
  const range = ranges(xy, roofs);
  const {traces, annotations} = roofTraces(roofs, range, c);
  const lineX = [];
  const lineY = [];
  for (const row of pairs) {
    const a = point(row.model);
    const b = point(row.hw);
    lineX.push(a.x, b.x, null);
    lineY.push(a.y, b.y, null);
  }
  traces.push({
    type: 'scatter',
    mode: 'lines',
    name: 'modelled → measured',
    x: lineX,
    y: lineY,
    line: {color: c.arrow, width: 1.2},
    hoverinfo: 'skip',
    meta: {kind: 'hw-pairs'},
  });
  const cloud = (name, list, which, symbol, color) => ({
    type: 'scatter',
    mode: 'markers',
    name,
    x: list.map((row) => point(row[which]).x),
    y: list.map((row) => point(row[which]).y),
    customdata: list.map((row) => row.key),
    text: list.map((row) => hover(row, which)),
    hovertemplate: '%{text}<extra></extra>',
    marker: {
      symbol: list.map((row) =>
        row.isProgram ? `star${symbol.endsWith('open') ? '-open' : ''}` : symbol,
      ),
      size: list.map((row) => (row.isProgram ? 18 : 11)),
      color,
      line: {width: 1.5, color: symbol.endsWith('open') ? color : c.paper},
    },
    meta: {kind: which === 'hw' ? 'hw-measured' : 'hw-modelled'},
  });
  traces.push(
    cloud('Modelled', pairs, 'model', 'circle-open', c.a),
    cloud('Measured (HW)', placed, 'hw', 'diamond', c.b),
  );
  return {data: traces, layout: baseLayout(range, c, {annotations})};
}

function table(rows, section, onSelectOp) {
  const bytes = Boolean((section.measured || {}).dram_bytes);
  const timed = Boolean(section.times_known);
  const head = ['Op', 'Kernels', 'Measured FLOPs', 'Modelled FLOPs', 'Measured ÷ modelled'];
  if (bytes) head.push('Measured bytes', 'Modelled bytes', 'Measured FLOP/byte');
  if (timed) head.push('Measured performance');
  const body = rows.map((row) => {
    const op = row.op;
    const cells = [
      el('td', {class: 'num', text: num(op.kernels)}),
      el('td', {class: 'num', text: amount(op.flops, 'FLOP')}),
      el('td', {
        class: 'num',
        text: op.modelled_flops > 0 ? amount(op.modelled_flops, 'FLOP') : '—',
      }),
      el('td', {class: 'num', text: ratio(op.flops_ratio)}),
    ];
    if (bytes)
      cells.push(
        el('td', {class: 'num', text: amount(op.bytes_accessed, 'B')}),
        el('td', {
          class: 'num',
          text: op.modelled_bytes > 0 ? amount(op.modelled_bytes, 'B') : '—',
        }),
        el('td', {
          class: 'num',
          text: op.operational_intensity === null ? '—' : num(op.operational_intensity),
        }),
      );
    if (timed)
      cells.push(
        el('td', {
          class: 'num',
          text: op.measured_flop_rate === null ? NOT_MEASURED : flopRate(op.measured_flop_rate),
        }),
      );
    const name = row.isProgram
      ? el('th', {scope: 'row', text: 'Program'})
      : el(
          'th',
          {scope: 'row'},
          el('button', {
            type: 'button',
            class: 'link-button op-name',
            title: 'Select this op in the table and on the chart',
            text: op.hlo_name,
            onclick: () => onSelectOp(row.key),
          }),
        );
    return el('tr', {'data-key': row.key}, name, cells);
  });
  return el(
    'table',
    {class: 'data-table compact', id: 'hw-table'},
    el('caption', {
      class: 'sr-only',
      text: 'Measured by hardware counters beside modelled, per op',
    }),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        head.map((h, i) => el('th', {scope: 'col', class: i ? 'num' : '', text: h})),
      ),
    ),
    el('tbody', {}, body),
  );
}

/**
 * The Total (HW) panel of a json with `hardware_counters` (null without): `element`, and
 * `draw(Plotly)` for its chart (a no-op when no op has a device time); `onSelectOp(key)`
 * selects an op in the view's table.
 */
export function hardwarePanel(data, onSelectOp, colors) {
  const section = data.hardware_counters;
  if (!section) return null;
  const rows = hardwareRows(data);
  const placed = rows.some((row) => row.hw && plottable(row.hw));
  const notes = (section.notes || []).map((text) => el('li', {text}));
  if (!placed)
    notes.unshift(
      el('li', {
        text: section.times_known
          ? 'No op has both measured FLOPs and measured bytes: nothing to place on the chart.'
          : 'No device times in this profile (the counters were recorded without kernel activity): measured FLOPs per op, no points on a roofline.',
      }),
    );
  const chart = placed
    ? el('div', {
        class: 'chart hw-chart',
        id: 'hw-chart',
        role: 'figure',
        'aria-label': 'Measured (HW) beside modelled roofline chart',
      })
    : null;
  const element = el(
    'section',
    {class: 'panel hardware', 'aria-labelledby': 'hw-title'},
    el(
      'div',
      {class: 'section-head'},
      el('h3', {id: 'hw-title', text: 'Total (HW): measured by hardware counters'}),
      el('span', {
        class: 'muted',
        text: `${num(section.joined)} of ${num(section.ranges)} kernels counted · ${section.source}`,
      }),
    ),
    el('ul', {class: 'notes hw-notes'}, notes),
    chart,
    el('div', {class: 'step-table-scroll'}, table(rows, section, onSelectOp)),
  );
  return {
    element,
    chart,
    async draw(Plotly) {
      if (!chart || !Plotly) return;
      const records = rows.flatMap((row) => [row.hw, row.model]).filter(Boolean);
      const figure = hardwareFigure({
        rows,
        roofs: roofModel(data.device || {}, records),
        colors: colors(),
      });
      await plot(
        Plotly,
        chart,
        figure,
        {
          plotly_click: (event) => {
            const p = event && event.points && event.points[0];
            if (p && p.customdata && !String(p.data.meta && p.data.meta.kind).endsWith('pairs'))
              onSelectOp(p.customdata);
          },
        },
        'roofline_hw',
      );
    },
  };
}
