// The "Roofline Compare" tool: selection B against A (run, host, step each). Both point
// clouds on one chart with an arrow from A to B per matched op, a program summary, and the
// aligned delta table of the `compare` route (sorted by |time Δ|).

import {api} from './api.js';
import {compareFigure, plot} from './charts.js';
import {COMPARE_COLUMNS} from './columns.js';
import {el, show, status} from './dom.js';
import {downloadChart, downloadCsv, downloadJson, exportButtons} from './export.js';
import {
  byteRate,
  counted,
  duration,
  escapeHtml as esc,
  flopRate,
  gibToGb,
  num,
  pct,
  signed,
} from './format.js';
import {
  boundByLabel,
  chartIntensity,
  mainMemory,
  opKey,
  plottable,
  roofModel,
  selectionRecords,
} from './model.js';
import {loadPlotly} from './plotly.js';
import {selectionLabel} from './state.js';
import {SortableTable} from './table.js';
import {colors, onThemeChange} from './theme.js';
import {markPaint} from './timing.js';

const MAX_ARROWS = 300;
const G = 1e9;

/** Finds an op's record: by module id + name, else by name when that is unique. */
function finder(records) {
  const byKey = new Map(records.map((r) => [opKey(r.hlo_module_id, r.hlo_name), r]));
  const byName = new Map();
  for (const r of records) byName.set(r.hlo_name, byName.has(r.hlo_name) ? null : r);
  return (program, name) => byKey.get(opKey(program, name)) || byName.get(name) || null;
}

function point(record, side, label, memory) {
  if (!record || !plottable(record)) return null;
  const hover = [
    `<b>${esc(record.hlo_name)}</b> (${side}: ${esc(label)})`,
    `time ${esc(duration(record.total_time_in_us || 0))} · ${esc(flopRate(record.measured_flop_rate))}`,
    `intensity ${esc(num(chartIntensity(record)))} FLOP/byte`,
    `bound by <b>${esc(boundByLabel(record.bound_by, memory))}</b> · roofline efficiency ${esc(pct(record.roofline_efficiency || 0))}`,
  ].join('<br>');
  return {x: chartIntensity(record), y: record.measured_flop_rate * G, hover};
}

const fixed2 = (v) => v.toFixed(2);

/**
 * The Program's time change: "Program time per step (device time summed over 8 TensorCores)
 * 5.592 ms → 5.597 ms (+4.4 µs, +0.08%)", each side's own words when they differ. `time`,
 * `perStep`: the compare route's `time` and `per_step` (what each side's times are).
 */
export function programTimeText(p, time = {}, perStep = {}) {
  const change = `(${signed(p.time_us_delta, duration)}, ${signed(p.time_us_delta_pct, fixed2)}%)`;
  const a = time.a || '';
  const b = time.b || '';
  const head = perStep.a && perStep.b ? 'Program time per step' : 'Program time';
  if (a === b) {
    const [words] = a.split(', ');
    return `${head}${words ? ` (${words})` : ''} ${duration(p.time_us_a)} → ${duration(p.time_us_b)} ${change}`;
  }
  return `${head} ${duration(p.time_us_a)} (A: ${a}) → ${duration(p.time_us_b)} (B: ${b}) ${change}`;
}

/** What each side's times are: "Times: device time summed over 8 TensorCores, per step (...)." */
export function basisText(time = {}) {
  if (!time.a && !time.b) return '';
  return time.a === time.b ? `Times: ${time.a}.` : `Times: A ${time.a}; B ${time.b}.`;
}

/** The program change in one sentence; `roofless`: no peaks known, so no efficiency or bound. */
export function summaryText(p, memory = 'HBM', roofless = false, time = {}, perStep = {}) {
  const timeText = programTimeText(p, time, perStep);
  const flops = `FLOP rate ${signed(p.flop_rate_delta_pct, fixed2)}%`;
  const parts = roofless
    ? [timeText, flops, 'no peaks known, so no roofline efficiency or bound']
    : [
        timeText,
        `roofline efficiency ${pct(p.efficiency_a)} → ${pct(p.efficiency_b)} (${signed(100 * (p.efficiency_delta || 0), fixed2)} points)`,
        flops,
        `bound by ${boundByLabel(p.bound_by_a, memory)} → ${boundByLabel(p.bound_by_b, memory)}`,
      ];
  const verdict =
    p.time_us_delta > 0 ? 'B is slower' : p.time_us_delta < 0 ? 'B is faster' : 'Same program time';
  return `${verdict}: ${parts.join('; ')}.`;
}

export class CompareView {
  constructor(container) {
    this.container = container;
    this.token = 0;
    onThemeChange(() => this.redraw());
  }

  /** a, b: {run, host, step}; peaks: '' (the profiles' own) or the `peaks` value of the API. */
  async show(a, b, peaks = '') {
    const token = ++this.token;
    this.labels = {
      a: selectionLabel(a.run, a.host, a.step),
      b: selectionLabel(b.run, b.host, b.step),
    };
    this.container.dataset.state = 'loading';
    if (this.chart && this.Plotly) this.Plotly.purge(this.chart);
    this.chart = null;
    show(this.container, status('loading', `Comparing ${this.labels.b} against ${this.labels.a}…`));
    let result;
    let dataA;
    let dataB;
    let Plotly;
    try {
      [result, dataA, dataB, Plotly] = await Promise.all([
        api.compare(a, b, peaks),
        api.roofline(a.run, a.host, a.step, peaks),
        api.roofline(b.run, b.host, b.step, peaks),
        loadPlotly(),
      ]);
    } catch (err) {
      if (token !== this.token) return;
      this.container.dataset.state = 'error';
      show(this.container, status('error', 'Could not compare these selections.', err.message));
      return;
    }
    if (token !== this.token) return;
    this.Plotly = Plotly;
    this.result = result;
    this.prepare(a, b, dataA, dataB);
    this.build(a, b);
    await this.draw();
    if (token !== this.token) return;
    this.container.dataset.state = 'ready';
    this.container.dataset.view = JSON.stringify({tool: 'compare', a, b});
  }

  prepare(a, b, dataA, dataB) {
    this.memory = mainMemory(dataA.device || {});
    const memory = this.memory;
    const selA = selectionRecords(dataA, a.step, true);
    const selB = selectionRecords(dataB, b.step, true);
    const findA = finder(selA.ops);
    const findB = finder(selB.ops);
    this.pairs = [];
    this.onlyA = [];
    this.onlyB = [];
    this.unplaced = 0;
    for (const op of this.result.ops || []) {
      op.key = opKey(op.program, op.operation);
      const pa =
        op.only_in === 'B'
          ? null
          : point(findA(op.program, op.operation), 'A', this.labels.a, memory);
      const pb =
        op.only_in === 'A'
          ? null
          : point(findB(op.program, op.operation), 'B', this.labels.b, memory);
      if (pa && pb) this.pairs.push({a: pa, b: pb, op});
      else if (pa && op.only_in === 'A') this.onlyA.push(pa);
      else if (pb && op.only_in === 'B') this.onlyB.push(pb);
      else this.unplaced += 1;
    }
    this.programs = [
      point(selA.program, 'A', this.labels.a, memory),
      point(selB.program, 'B', this.labels.b, memory),
    ];
    this.roofs = roofModel(dataA.device || {}, [selA.program, ...selA.ops].filter(Boolean));
    this.peaksSource = (dataA.device || {}).peaks_source || '';
    const devA = (dataA.device || {}).device_type;
    const devB = (dataB.device || {}).device_type;
    this.deviceNote = devA !== devB ? "The roofs drawn are A's." : '';
  }

  build(a, b) {
    const p = this.result.program || {};
    const name = `roofline_compare_${a.run}_${a.step}_vs_${b.run}_${b.step}`;
    this.chart = el('div', {
      class: 'chart compare-chart',
      id: 'compare-chart',
      role: 'figure',
      'aria-label': 'Compare chart: arrows from A to B',
    });
    this.table = new SortableTable(COMPARE_COLUMNS, {
      id: 'compare-table',
      label: 'Op deltas, B against A',
      sort: {key: 'abs_delta', dir: 'desc'},
    });
    const ops = this.result.ops || [];
    const only = (side) => ops.filter((op) => op.only_in === side).length;
    const notes = [
      `${this.pairs.length} matched op${this.pairs.length === 1 ? '' : 's'} with an arrow from A (hollow) to B (filled)` +
        (this.pairs.length > MAX_ARROWS
          ? ` (arrows for the ${MAX_ARROWS} largest time changes)`
          : '') +
        '.',
    ];
    if (only('A') || only('B'))
      notes.push(`${counted(only('A'), 'op')} only in A, ${only('B')} only in B.`);
    if (this.unplaced)
      notes.push(
        `${counted(this.unplaced, 'op')} with no FLOPs or no byte counts ${this.unplaced === 1 ? 'is' : 'are'} in the table only.`,
      );
    const warnings = this.result.warnings || [];
    if (this.deviceNote) notes.push(this.deviceNote);
    if (this.roofs.none)
      notes.push(
        'No peaks known: no roofs; ops are placed by operational intensity (FLOPs per byte accessed). Choose Device peaks in the sidebar to draw roofs.',
      );
    show(
      this.container,
      el(
        'header',
        {class: 'view-header'},
        el('h2', {text: 'Roofline Compare'}),
        el(
          'p',
          {class: 'muted selection-label'},
          el('span', {class: 'side a', text: 'A'}),
          ' ',
          el('bdi', {text: this.labels.a}),
          '  ',
          el('span', {class: 'side b', text: 'B'}),
          ' ',
          el('bdi', {text: this.labels.b}),
        ),
      ),
      el(
        'section',
        {class: 'panel summary', 'aria-label': 'Program summary'},
        el('p', {
          class: 'summary-line',
          id: 'compare-summary',
          text: summaryText(
            p,
            this.memory,
            this.roofs.none,
            this.result.time,
            this.result.per_step,
          ),
        }),
        warnings.map((text) =>
          el('p', {class: 'note warning', 'data-note': 'compare-warning', role: 'note', text}),
        ),
        el('p', {
          class: 'muted',
          id: 'compare-basis',
          text: `Program FLOP rate ${flopRate(p.flop_rate_a)} → ${flopRate(p.flop_rate_b)}; ${this.memory} ${byteRate(gibToGb(p.hbm_bw_a))} → ${byteRate(gibToGb(p.hbm_bw_b))}. A Total compares as its Average step (the mean complete step), so runs compare per step. ${basisText(this.result.time)}`,
        }),
      ),
      el(
        'section',
        {class: 'panel', 'aria-labelledby': 'compare-chart-title'},
        el(
          'div',
          {class: 'section-head'},
          el('h3', {id: 'compare-chart-title', text: 'Ops, A → B'}),
          exportButtons('Chart export', [
            ['PNG', () => downloadChart(this.Plotly, this.chart, 'png', name)],
            ['SVG', () => downloadChart(this.Plotly, this.chart, 'svg', name)],
          ]),
        ),
        el(
          'div',
          {class: 'notes'},
          notes.map((text) => el('p', {class: 'note', text})),
        ),
        this.chart,
      ),
      el(
        'section',
        {class: 'panel', 'aria-labelledby': 'compare-table-title'},
        el(
          'div',
          {class: 'section-head'},
          el('h3', {id: 'compare-table-title', text: 'Op deltas (B − A), largest |time Δ| first'}),
          el('span', {class: 'muted table-info', text: `${ops.length} ops`}),
          exportButtons('Table export', [
            ['CSV', () => downloadCsv(this.table, name)],
            [
              'JSON',
              () =>
                downloadJson(this.table, name, {a: this.result.a, b: this.result.b, program: p}),
            ],
          ]),
        ),
        this.table.element,
      ),
    );
    for (const op of ops) op.rowClass = op.only_in ? 'only' : '';
    this.table.setRows(ops);
  }

  async draw() {
    await plot(
      this.Plotly,
      this.chart,
      compareFigure({
        pairs: this.pairs,
        onlyA: this.onlyA,
        onlyB: this.onlyB,
        programs: this.programs,
        roofs: this.roofs,
        colors: colors(),
        labels: this.labels,
        maxArrows: MAX_ARROWS,
      }),
      {plotly_afterplot: () => markPaint('compareChart')},
      'roofline_compare',
    );
  }

  redraw() {
    if (this.Plotly && !this.container.hidden && this.container.dataset.state === 'ready')
      this.draw();
  }
}
