// The "Roofline Model" tool: device panel, filters, op-level chart, op table, program-level
// chart with its steps. Clicking a dot selects its row; clicking a row rings its dot.

import {advicePanel} from './advice.js';
import {api} from './api.js';
import {drawStatic, opFigure, plot, programFigure} from './charts.js';
import {opColumns} from './columns.js';
import {opDetail} from './op_detail.js';
import {devicePanel, deviceTimeText} from './device.js';
import {el, show, status} from './dom.js';
import {downloadChart, downloadCsv, downloadJson, exportButtons} from './export.js';
import {filterBar} from './filters.js';
import {hardwarePanel} from './hardware.js';
import {duration, flopRate, flopUnit, namesPhrase, num, pct, stepsPhrase} from './format.js';
import {
  applyFilters,
  boundByLabel,
  chartIntensity,
  chartProgramPoints,
  mainMemory,
  opRows,
  plottable,
  programPoints,
  roofModel,
  selectionRecords,
} from './model.js';
import {noRoofsNote} from './peaks.js';
import {pageCount, pager} from './pager.js';
import {loadPlotly} from './plotly.js';
import {loadingProgress} from './progress.js';
import {prefetchNeighbours} from './prefetch.js';
import {selectionLabel, stepsWithoutOps} from './state.js';
import {SortableTable} from './table.js';
import {colors, onThemeChange} from './theme.js';
import {markOnce, markPaint} from './timing.js';

export const STEP_TABLE_PAGE = 50; // step rows of the program table per page
// The chart library runs (over a second of main thread the first time) only once the op
// chart's first view is on the screen, unless the data takes longer than this (a profile
// converting): then it runs meanwhile.
const PLOTLY_WHILE_WAITING_MS = 1500;
const PAINT_WAIT_MS = 100; // a frame at most: a hidden page paints nothing

/** Resolves once the browser has painted what is on the page now (or after PAINT_WAIT_MS). */
function afterPaint() {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, PAINT_WAIT_MS);
    requestAnimationFrame(() =>
      setTimeout(() => {
        clearTimeout(timer);
        resolve();
      }, 0),
    );
  });
}

const isStepPoint = (p) => p.step !== 'total' && p.step !== 'average';
const stepCount = (points) => points.filter(isStepPoint).length;

/** After paging: focus back on the button used, or on its opposite once it is disabled. */
function focusPager(container, id) {
  const opposite = {first: 'next', prev: 'next', next: 'prev', last: 'prev'};
  const suffix = id.split('-').pop();
  const again = container.querySelector(`#${id}`);
  const other = container.querySelector(`#${id.replace(/[a-z]+$/, opposite[suffix] || '')}`);
  for (const node of [again, other]) {
    if (node && !node.disabled) {
      node.focus();
      return;
    }
  }
}

export class ModelView {
  /**
   * container: the element to draw into; filters: the filter values to start from;
   * onFilters(filters): the user changed the filters; onChooseStep(step): the user picked a
   * step; onChoosePeaks(value): the user picked peaks; onCalibrate(): the user asked to
   * measure this machine.
   */
  constructor(
    container,
    {filters, onFilters = () => {}, onChooseStep, onChoosePeaks = () => {}, onCalibrate = () => {}},
  ) {
    this.container = container;
    this.filterValues = filters;
    this.onFilters = onFilters;
    this.onChooseStep = onChooseStep;
    this.onChoosePeaks = onChoosePeaks;
    this.onCalibrate = onCalibrate;
    this.peaksChoices = null;
    this.peaksNote = null;
    this.loading = null; // the loading status shown: {key, stale, progress}
    this.shownKey = ''; // run and host of the view on the page ('' when none)
    this.token = 0;
    this.selectedKey = '';
    this.boxKeys = null;
    onThemeChange(() => this.redraw());
  }

  /**
   * Says that `sel` is on its way: over the view of the same run and host (another step,
   * the infeed/outfeed toggle, other peaks) the current view stays, dimmed, with a small
   * status on top; otherwise a status with the server's stage and the time so far.
   */
  showLoading(sel) {
    const label = selectionLabel(sel.run, sel.host, sel.step, sel.device);
    const key = `${sel.run}\u0000${sel.host}`;
    this.container.dataset.state = 'loading';
    if (this.shownKey === key) {
      this.dim(label, key, sel); // a view of this profile is on the page: it stays till the new
      return;
    }
    if (this.loading && this.loading.key === key && !this.loading.stale) return; // counting on
    this.token += 1; // a view of another profile still drawing stops: its charts go now
    this.endLoading();
    this.purge();
    this.shownKey = '';
    const progress = loadingProgress(
      `Loading the roofline of ${label}… (the first load of a large profile can take a while)`,
      sel.run,
      sel.host,
    );
    this.loading = {key, stale: false, progress};
    show(this.container, progress.node);
  }

  /** Keeps the current view, dimmed and inert, with a loading status over it. */
  dim(label, key, sel) {
    this.endLoading();
    const progress = loadingProgress(`Loading ${label}…`, sel.run, sel.host);
    progress.node.classList.add('stale-status');
    this.loading = {key, stale: true, progress};
    this.container.classList.add('stale');
    this.container.setAttribute('aria-busy', 'true');
    this.container.prepend(progress.node);
  }

  /** The loading status's timers stopped and the view undimmed (the new one is in). */
  endLoading() {
    if (this.loading) this.loading.progress.stop();
    this.loading = null;
    this.container.classList.remove('stale');
    this.container.removeAttribute('aria-busy');
    for (const node of this.container.querySelectorAll(':scope > .stale-status')) node.remove();
  }

  async show(sel) {
    const token = ++this.token;
    // The average step's Program point stays while the profile and its choices do: only the
    // step changes (it is fetched again otherwise, `addAverageIfMissing`).
    const same =
      this.sel &&
      ['run', 'host', 'peaks', 'include', 'device'].every((k) => this.sel[k] === sel[k]);
    if (!same) this.averageProgram = null;
    this.showLoading(sel);
    this.sel = sel;
    this.selectedKey = '';
    this.boxKeys = null;
    const label = selectionLabel(sel.run, sel.host, sel.step, sel.device);
    // Everything is drawn as soon as the data is here, the op chart as a first view
    // (static_chart.js); the charts are Plotly's once the chart library (downloading since
    // the page started) has run.
    const waiting = this.Plotly
      ? null
      : setTimeout(() => loadPlotly().catch(() => {}), PLOTLY_WHILE_WAITING_MS);
    let data;
    let total;
    try {
      [data, total] = await Promise.all([
        api
          .roofline(sel.run, sel.host, sel.step, sel.peaks, sel.device)
          .then((d) => (markOnce('dataLoadedMs'), d)),
        api.roofline(sel.run, sel.host, 'total', sel.peaks, sel.device),
      ]);
    } catch (err) {
      clearTimeout(waiting);
      if (token !== this.token) return;
      this.endLoading();
      this.purge();
      this.shownKey = '';
      this.container.dataset.state = 'error';
      show(
        this.container,
        status(
          'error',
          `Could not load ${label}.`,
          `${err.message.replace(/\.$/, '')}. Other runs and hosts are not affected: choose another in the sidebar.`,
        ),
      );
      return;
    }
    clearTimeout(waiting);
    if (token !== this.token) return;
    this.endLoading();
    this.shownKey = `${sel.run}\u0000${sel.host}`;
    this.data = data;
    this.total = total;
    const {program, ops} = selectionRecords(data, sel.step, sel.include);
    this.program = program;
    this.rows = opRows(ops, data.ops, data.device, data.roofline_classes);
    const allRecords = program ? [program, ...ops] : ops;
    this.roofs = roofModel(data.device || {}, allRecords);
    this.memory = mainMemory(data.device || {});
    const memoryNotes = new Map(
      this.roofs.memories
        .filter((m) => m.noBytes)
        .map((m) => [m.name, 'no byte counts in profile']),
    );
    this.stepPage = null; // the program table opens on the selected step's page
    this.build(label, memoryNotes);
    if (this.rows.length) this.applyRows();
    this.showPrograms();
    markOnce('panelShownMs');
    if (!this.Plotly && this.rows.length) {
      await this.drawFirstView(token);
      if (token !== this.token) return;
    }
    try {
      this.Plotly = this.Plotly || (await loadPlotly());
    } catch (err) {
      if (token !== this.token) return;
      for (const node of [this.opChart, this.programChart])
        if (node) show(node, status('error', 'The charts could not be drawn.', err.message));
      this.container.dataset.state = 'ready';
      return;
    }
    if (token !== this.token) return;
    await this.draw(token);
    if (token !== this.token) return;
    this.container.dataset.state = 'ready';
    this.container.dataset.view = JSON.stringify({
      tool: 'model',
      run: sel.run,
      host: sel.host,
      step: sel.step,
      include: sel.include,
      device: sel.device || 'all',
    });
    prefetchNeighbours(sel, this.total);
    this.addAverageIfMissing(token);
  }

  /**
   * The op chart's first view, before the chart library has run: the same figure drawn as a
   * plain SVG; its paint is the op chart's first paint (Plotly's is `opChartPlotly`).
   */
  async drawFirstView(token) {
    if (!this.opChart) return;
    drawStatic(this.opChart, this.opFigure());
    await afterPaint();
    if (token === this.token && this.opChart.querySelector('.chart-static')) markPaint('opChart');
  }

  /** The op chart's figure for the rows shown. */
  opFigure() {
    return opFigure({
      rows: this.shownRows,
      program: this.program,
      roofs: this.roofs,
      colors: colors(),
      selectedKey: this.selectedKey,
      memory: this.memory,
    });
  }

  /** Frees the charts of the previous selection (Plotly keeps window listeners otherwise). */
  purge() {
    const hardwareChart = this.hardware && this.hardware.chart;
    for (const node of [this.opChart, this.programChart, hardwareChart])
      if (node && this.Plotly) this.Plotly.purge(node);
    this.opChart = null;
    this.programChart = null;
  }

  build(label, memoryNotes) {
    this.purge();
    this.peaksNote = null;
    const sel = this.sel;
    const title = el(
      'header',
      {class: 'view-header'},
      el('h2', {text: 'Roofline Model'}),
      el('p', {class: 'muted selection-label'}, el('bdi', {text: label})),
    );
    const advice = advicePanel(this.data.advice, (key) => this.selectOp(key, true));
    this.hardware = hardwarePanel(this.data, (key) => this.selectOp(key, true), colors);
    const parts = [title, advice, devicePanel(this.data, memoryNotes)].filter(Boolean);
    if (this.hardware) parts.push(this.hardware.element);
    if (!this.rows.length) {
      parts.push(
        status(
          'empty',
          this.data.device.hardware_type === 'CPU'
            ? 'This profile has no ops to place on a roofline (no XLA ops on the host). See the notes above.'
            : this.program && this.program.total_time_in_us > 0
              ? 'This selection has no device ops (with this infeed/outfeed setting).'
              : 'This profile has no device ops: nothing ran on an accelerator while it was recorded. See the notes above.',
        ),
      );
    } else {
      this.filters = filterBar(this.rows, this.filterValues, (filters) => {
        this.filterValues = filters;
        this.onFilters(filters);
        this.selectedKey = '';
        this.refresh();
      });
      this.opChart = el(
        'div',
        {
          class: 'chart op-chart',
          id: 'op-chart',
          role: 'figure',
          'aria-label': 'Op-level roofline chart',
        },
        this.pendingChart(),
      );
      this.chartNotes = el('div', {class: 'notes', 'aria-live': 'polite'});
      this.peaksNote = el('div', {class: 'peaks-note'});
      this.renderPeaksNote();
      const rate = flopUnit(Math.max(0, ...this.rows.map((r) => r.flopRate)));
      this.table = new SortableTable(opColumns(this.memory, rate), {
        id: 'op-table',
        label: 'Ops of the selection',
        sort: {key: 'self_time_us', dir: 'desc'},
        onSelect: (key) => this.selectOp(key, false),
        detail: opDetail,
      });
      this.tableInfo = el('span', {class: 'muted table-info'});
      this.boxNote = el('div', {class: 'box-note'});
      const name = `roofline_${sel.run}_${sel.host}_${sel.step}`;
      const meta = () => ({
        selection: {
          run: sel.run,
          host: sel.host,
          step: sel.step,
          include_infeed_outfeed: sel.include,
        },
        filters: this.filterValues,
      });
      // The chart first, right under the answer and the folded device line (in the first
      // screen at 1440×900); its notes and the filters below it, then the table.
      parts.push(
        el(
          'section',
          {class: 'panel op-chart-panel', 'aria-labelledby': 'op-chart-title'},
          el(
            'div',
            {class: 'section-head'},
            el('h3', {id: 'op-chart-title', text: 'Ops on the roofline'}),
            el('span', {
              class: 'muted',
              text: 'dot area ∝ self time · colour = category · ★ = Program · drag to zoom, shift-drag or the box tool to select',
            }),
            exportButtons('Chart export', [
              [
                'PNG',
                () => downloadChart(this.Plotly, this.opChart, 'png', name),
                'Download the chart as PNG',
              ],
              [
                'SVG',
                () => downloadChart(this.Plotly, this.opChart, 'svg', name),
                'Download the chart as SVG',
              ],
            ]),
          ),
          this.peaksNote,
          this.opChart,
          this.chartNotes,
        ),
        el('section', {class: 'panel', 'aria-label': 'Filters'}, this.filters.element),
        el(
          'section',
          {class: 'panel', 'aria-labelledby': 'op-table-title'},
          el(
            'div',
            {class: 'section-head'},
            el('h3', {id: 'op-table-title', text: 'Ops'}),
            this.tableInfo,
            exportButtons('Table export', [
              ['CSV', () => downloadCsv(this.table, name), 'Download the rows shown as CSV'],
              [
                'JSON',
                () => downloadJson(this.table, name, meta()),
                'Download the rows shown as JSON',
              ],
            ]),
          ),
          this.boxNote,
          this.table.element,
        ),
      );
    }
    this.programChart = el(
      'div',
      {
        class: 'chart program-chart',
        id: 'program-chart',
        role: 'figure',
        'aria-label': 'Program-level roofline chart',
      },
      this.pendingChart(),
    );
    this.programInfo = el('div', {class: 'notes'});
    this.stepTable = el('div', {class: 'step-table'});
    parts.push(
      el(
        'section',
        {class: 'panel', 'aria-labelledby': 'program-title'},
        el(
          'div',
          {class: 'section-head'},
          el('h3', {
            id: 'program-title',
            text: 'Program: whole profile, average step and each step',
          }),
          exportButtons('Program chart export', [
            ['PNG', () => downloadChart(this.Plotly, this.programChart, 'png', `${name}_program`)],
            ['SVG', () => downloadChart(this.Plotly, this.programChart, 'svg', `${name}_program`)],
          ]),
        ),
        this.programInfo,
        el('div', {class: 'program-row'}, this.programChart, this.stepTable),
      ),
    );
    show(this.container, parts);
  }

  /** Stands in a chart's place until the chart library is ready (removed by `plot`). */
  pendingChart() {
    if (this.Plotly) return null;
    const node = status('loading', 'Loading the chart library…');
    node.classList.add('chart-pending');
    return node;
  }

  /** The peaks the tab can offer changed (e.g. a measurement of this machine progressed). */
  setPeaksChoices(choices) {
    this.peaksChoices = choices;
    this.renderPeaksNote();
  }

  /** Without roofs: why, how ops are placed instead, and what draws roofs. */
  renderPeaksNote() {
    if (!this.peaksNote) return;
    if (!this.roofs || !this.roofs.none) {
      show(this.peaksNote);
      return;
    }
    show(
      this.peaksNote,
      noRoofsNote({
        memory: this.memory,
        choices: this.peaksChoices,
        value: this.sel.peaks || '',
        on: {onChoose: (value) => this.onChoosePeaks(value), onCalibrate: () => this.onCalibrate()},
      }),
    );
  }

  filtered() {
    const {rows, error} = applyFilters(this.rows, this.filterValues);
    this.filters.setError(error);
    return rows;
  }

  /** The op chart first (what the user came for), then the program chart. */
  async draw(token) {
    if (this.rows.length) await this.drawOps(token);
    if (token === this.token) await this.plotPrograms();
    if (token === this.token && this.hardware) await this.hardware.draw(this.Plotly);
  }

  /** Re-applies the filters to the chart, the notes and the table. */
  async refresh(token = this.token) {
    this.applyRows();
    await this.drawOps(token);
  }

  /** The filters applied to the table and the notes (the chart is `drawOps`). */
  applyRows() {
    const rows = this.filtered();
    this.shownRows = rows;
    const tableRows = this.boxKeys ? rows.filter((row) => this.boxKeys.has(row.key)) : rows;
    for (const row of tableRows)
      row.rowClass = row.aboveRoof ? 'above-roof' : row.plottable ? '' : 'not-plotted';
    this.table.setRows(tableRows);
    this.table.select(this.selectedKey);
    this.tableInfo.textContent = `${tableRows.length} of ${this.rows.length} ops shown`;
    this.updateNotes(rows);
    this.updateBoxNote(tableRows.length);
  }

  updateNotes(rows) {
    const plotted = rows.filter((row) => row.plottable).length;
    const unplaced = rows.length - plotted;
    const above = rows.filter((row) => row.aboveRoof).length;
    const notes = [
      el('p', {
        class: 'note',
        'data-note': 'plotted',
        text: `${plotted} of ${rows.length} ops on the chart.`,
      }),
    ];
    if (unplaced) {
      notes.push(
        el('p', {
          class: 'note',
          'data-note': 'not-plotted',
          text:
            `${unplaced} op${unplaced === 1 ? ' has' : 's have'} no FLOPs or no byte counts, so ${unplaced === 1 ? 'it cannot' : 'they cannot'} be placed on log axes: ` +
            'listed in the table only (greyed).',
        }),
      );
    }
    if (above) {
      notes.push(
        el('p', {
          class: 'note warning',
          'data-note': 'above-roof',
          text:
            `${above} op${above === 1 ? ' is' : 's are'} above ${above === 1 ? 'its' : 'their'} roof by more than 5% (red outline): usually asynchronous copies ` +
            'whose time is not their transfer time, a wrong peak, or an inexact cost model; not real speed.',
        }),
      );
    }
    if (this.program) {
      const p = this.program;
      const bound = this.roofs.none
        ? 'no roof known (no peaks)'
        : `bound by ${boundByLabel(p.bound_by, this.memory)} at ${pct(p.roofline_efficiency || 0)} of the roof`;
      notes.push(
        el('p', {
          class: 'note',
          'data-note': 'program',
          text:
            `Program: ${duration(p.total_time_in_us || 0)} of ${deviceTimeText(this.data.device || {})}, ${flopRate(p.measured_flop_rate || 0)}, ` +
            `${num(chartIntensity(p))} FLOP/byte, ${bound}.`,
        }),
      );
    }
    show(this.chartNotes, notes);
  }

  updateBoxNote(count) {
    if (!this.boxKeys) {
      show(this.boxNote);
      return;
    }
    show(
      this.boxNote,
      el(
        'p',
        {class: 'note'},
        `Showing the ${count} op${count === 1 ? '' : 's'} selected on the chart. `,
        el('button', {
          type: 'button',
          class: 'small',
          text: 'Show all',
          onclick: () => this.clearBox(),
        }),
      ),
    );
  }

  async drawOps(token = this.token) {
    if (!this.opChart || token !== this.token) return;
    const figure = this.opFigure();
    if (!this.Plotly) {
      // The first view is up: drawn again (the filters changed); Plotly's comes later.
      if (this.opChart.querySelector('.chart-static')) drawStatic(this.opChart, figure);
      return;
    }
    await plot(
      this.Plotly,
      this.opChart,
      figure,
      {
        plotly_afterplot: () => {
          markPaint('opChart');
          markPaint('opChartPlotly');
        },
        plotly_click: (event) => {
          const point = event && event.points && event.points[0];
          const meta = point && point.data && point.data.meta;
          if (meta && meta.kind === 'ops') this.selectOp(point.customdata, true);
        },
        plotly_selected: (event) => {
          if (!event || !event.points) return;
          const keys = event.points
            .filter((p) => p.data.meta && p.data.meta.kind === 'ops')
            .map((p) => p.customdata);
          this.boxKeys = new Set(keys);
          this.refreshTable();
        },
        plotly_deselect: () => this.clearBox(),
      },
      `roofline_${this.sel.run}_${this.sel.host}_${this.sel.step}`,
    );
  }

  refreshTable() {
    const rows = this.boxKeys
      ? this.shownRows.filter((row) => this.boxKeys.has(row.key))
      : this.shownRows;
    this.table.setRows(rows);
    this.table.select(this.selectedKey);
    this.tableInfo.textContent = `${rows.length} of ${this.rows.length} ops shown`;
    this.updateBoxNote(rows.length);
  }

  clearBox() {
    if (!this.boxKeys) return;
    this.boxKeys = null;
    this.refreshTable();
  }

  /** Selects an op: its row is marked (and scrolled to when fromChart), its dot ringed. */
  selectOp(key, fromChart) {
    this.selectedKey = key;
    this.table.select(key, {scroll: fromChart});
    const row = this.rows.find((r) => r.key === key);
    const gd = this.opChart;
    if (!this.Plotly) return; // the chart draws the ring when it comes
    const index =
      gd && gd.data ? gd.data.findIndex((t) => t.meta && t.meta.kind === 'highlight') : -1;
    if (index < 0) return;
    const on = row && row.plottable;
    this.Plotly.restyle(
      gd,
      {
        x: [on ? [row.intensity] : []],
        y: [on ? [row.flopRate * 1e9] : []],
        meta: [{kind: 'highlight', key: on ? key : ''}],
      },
      [index],
    );
  }

  /** The program points of this selection's profile: Total, Average step, each step (the
   * same array while the profile, the infeed/outfeed choice and the average point stay). */
  programPointsOf() {
    const memo = this.pointsMemo;
    const key = [this.total, this.sel.include, this.averageProgram];
    if (memo && memo.key.every((part, i) => part === key[i])) return memo.points;
    const points = this.collectProgramPoints();
    this.pointsMemo = {key, points};
    return points;
  }

  collectProgramPoints() {
    const steps = this.total.steps || [];
    let points = programPoints(this.total, this.sel.include);
    // No step holds an op (every op ran outside the steps): Total only, said once by the
    // device panel's note, instead of a zero row per step.
    if (stepsWithoutOps({steps})) return points.filter((p) => p.step === 'total');
    if (this.averageProgram && !points.some((p) => p.step === 'average')) {
      points = [
        points[0],
        {label: 'Average step', step: 'average', record: this.averageProgram},
        ...points.slice(1),
      ].filter(Boolean);
    }
    // A profile without steps still has an all-zero average row (as XProf): not a point.
    return points.filter((p) => p.step !== 'average' || (p.record.total_time_in_us || 0) > 0);
  }

  /** The program notes and table (everything of the program section but its chart). */
  showPrograms() {
    const steps = this.total.steps || [];
    const withoutOps = stepsWithoutOps({steps});
    const incomplete = new Set(
      withoutOps ? [] : steps.filter((s) => !s.complete).map((s) => String(s.step_num)),
    );
    const points = this.programPointsOf();
    const chart = chartProgramPoints(points, this.sel.step);
    this.programPointsShown = points;
    this.programChartPoints = chart.points;
    this.incomplete = incomplete;
    const unplaced = points.filter((p) => !plottable(p.record));
    const info = [
      el('p', {
        class: 'note',
        'data-note': 'time-meaning',
        text: `Times are ${deviceTimeText(this.total.device || {})}, not wall time (a step's wall time is in the Step picker's Slowest / Fastest hints).`,
      }),
    ];
    if (!steps.length) {
      info.push(
        el('p', {
          class: 'note',
          'data-note': 'no-steps',
          text: 'No step markers in this profile: only the whole-profile point (Total) is shown.',
        }),
      );
    }
    if (withoutOps) {
      // Said here, in view: the device panel that has the server's note opens on click.
      info.push(
        el('p', {
          class: 'note',
          'data-note': 'steps-without-ops',
          text: `No step holds an op (every op ran outside the ${steps.length === 1 ? 'step' : `${num(steps.length)} steps`}): only the whole-profile point (Total) is shown.`,
        }),
      );
    }
    if (chart.runLength > 1) {
      info.push(
        el('p', {
          class: 'note',
          'data-note': 'steps-thinned',
          text:
            `${num(stepCount(chart.points))} of ${num(stepCount(points))} steps on the chart: the median-time ` +
            `step of each run of ${chart.runLength} consecutive steps, the slowest, the fastest and the ` +
            'selected step. The table lists every step.',
        }),
      );
    }
    if (incomplete.size) {
      const drawn = points.some((p) => incomplete.has(p.step));
      info.push(
        el('p', {
          class: 'note',
          'data-note': 'incomplete-steps',
          text:
            `${stepsPhrase(incomplete)} ${incomplete.size === 1 ? 'was' : 'were'} cut by the profile window (incomplete): ` +
            `left out of the average${drawn ? ', drawn hollow' : ' and, having no whole-step row, not drawn'}.`,
        }),
      );
    }
    if (unplaced.length) {
      info.push(
        el('p', {
          class: 'note',
          'data-note': 'program-not-plotted',
          text: `Not on the chart (no FLOPs or no bytes): ${namesPhrase(unplaced.map((p) => p.label))}.`,
        }),
      );
    }
    show(this.programInfo, info);
    this.renderStepTable(points, incomplete);
  }

  /** The program chart (Plotly ready). */
  async plotPrograms() {
    if (!this.Plotly || !this.programChart) return;
    const points = this.programChartPoints;
    const roofs = roofModel(
      this.total.device || {},
      points.map((p) => p.record),
    );
    await plot(
      this.Plotly,
      this.programChart,
      programFigure({
        points,
        roofs,
        colors: colors(),
        selectedStep: this.sel.step,
        incomplete: this.incomplete,
        memory: this.memory,
      }),
      {
        plotly_click: (event) => {
          const point = event && event.points && event.points[0];
          if (point && point.data.meta && point.data.meta.kind === 'program-points')
            this.onChooseStep(String(point.customdata));
        },
      },
      `roofline_${this.sel.run}_${this.sel.host}_program`,
    );
  }

  async drawPrograms() {
    this.showPrograms();
    await this.plotPrograms();
  }

  /**
   * The program table: Total and Average on every page, then one page of steps (the selected
   * step's page until the user pages), with page controls past one page.
   */
  renderStepTable(points, incomplete) {
    const fixed = points.filter((p) => !isStepPoint(p));
    const steps = points.filter(isStepPoint);
    const pages = pageCount(steps.length, STEP_TABLE_PAGE);
    if (this.stepPage === null || this.stepPage >= pages) {
      const at = steps.findIndex((p) => p.step === this.sel.step);
      this.stepPage = at < 0 ? 0 : Math.floor(at / STEP_TABLE_PAGE);
    }
    const start = this.stepPage * STEP_TABLE_PAGE;
    const shown = [...fixed, ...steps.slice(start, start + STEP_TABLE_PAGE)];
    const meaning = deviceTimeText(this.total.device || {});
    const head = ['Step', 'Device time', 'Performance', 'FLOP/byte', 'Bound by', 'Efficiency'];
    const titles = {1: `Program time: ${meaning}, not wall time`};
    const body = shown.map((p) => {
      const r = p.record;
      const chosen = p.step === this.sel.step;
      const tr = el(
        'tr',
        {
          tabindex: '0',
          class: chosen ? 'selected' : '',
          'aria-selected': chosen ? 'true' : null,
          'data-step': p.step,
          title: 'Show this step',
        },
        el('th', {scope: 'row', text: p.label + (incomplete.has(p.step) ? ' (incomplete)' : '')}),
        el('td', {class: 'num', text: duration(r.total_time_in_us || 0)}),
        el('td', {class: 'num', text: flopRate(r.measured_flop_rate || 0)}),
        el('td', {class: 'num', text: num(chartIntensity(r))}),
        el('td', {text: boundByLabel(r.bound_by, this.memory)}),
        el('td', {class: 'num', text: this.roofs.none ? '—' : pct(r.roofline_efficiency || 0)}),
      );
      const choose = () => this.onChooseStep(p.step);
      tr.addEventListener('click', choose);
      tr.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          choose();
        }
      });
      return tr;
    });
    const table = el(
      'table',
      {class: 'data-table compact', id: 'step-table'},
      el('caption', {class: 'sr-only', text: 'Program per step; choose a row to show that step'}),
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          head.map((h, i) =>
            el('th', {scope: 'col', class: i ? 'num' : '', text: h, title: titles[i] || null}),
          ),
        ),
      ),
      el('tbody', {}, body),
    );
    const paging =
      pages > 1
        ? pager({
            id: 'step-pager',
            page: this.stepPage,
            pages,
            label: 'Pages of steps',
            text: `Steps ${num(start + 1)}–${num(Math.min(start + STEP_TABLE_PAGE, steps.length))} of ${num(steps.length)}`,
            onPage: (page) => {
              const focused = document.activeElement ? document.activeElement.id : '';
              this.stepPage = page;
              this.renderStepTable(points, incomplete);
              focusPager(this.stepTable, focused);
            },
          })
        : null;
    show(this.stepTable, paging, el('div', {class: 'step-table-scroll'}, table));
  }

  /** GPU totals have no AVERAGE_STEP Program row: fetch the average selection's Program. */
  async addAverageIfMissing(token) {
    const steps = this.total.steps || [];
    if (
      this.averageProgram ||
      !steps.some((s) => s.complete) ||
      stepsWithoutOps({steps}) ||
      programPoints(this.total, this.sel.include).some((p) => p.step === 'average')
    )
      return;
    try {
      const avg = await api.roofline(
        this.sel.run,
        this.sel.host,
        'average',
        this.sel.peaks,
        this.sel.device,
      );
      if (token !== this.token) return;
      this.averageProgram = selectionRecords(avg, 'average', this.sel.include).program;
      if (this.averageProgram) await this.drawPrograms();
    } catch {
      // The average point is optional.
    }
  }

  redraw() {
    if (!this.Plotly && this.rows && this.rows.length) this.drawOps(); // the first view, if up
    if (!this.Plotly || this.container.hidden || this.container.dataset.state !== 'ready') return;
    if (this.rows.length) this.drawOps();
    this.drawPrograms();
    if (this.hardware) this.hardware.draw(this.Plotly);
  }
}
