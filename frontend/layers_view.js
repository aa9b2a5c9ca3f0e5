// The "Roofline Layers" tool: the layer tree of a selection (the json's `layers`: name
// scopes, module paths, their forward and backward passes), a tree table with expand /
// collapse and a depth control, the roofline of the layers at that depth, and the ops of the
// layer clicked (in the table or on the chart).

import {api} from './api.js';
import {categoryStyles, plot, programPoint} from './charts.js';
import {el, show, status} from './dom.js';
import {downloadChart, exportButtons} from './export.js';
import {
  byteRate,
  duration,
  escapeHtml as esc,
  flopRate,
  flopUnit,
  gibToGb,
  num,
  pct,
} from './format.js';
import {boundByLabel, chartIntensity, mainMemory, plottable, roofModel} from './model.js';
import {loadPlotly} from './plotly.js';
import {baseLayout, ranges, roofTraces} from './roofs.js';
import {selectionLabel} from './state.js';
import {colors, onThemeChange} from './theme.js';

const G = 1e9;
const MAX_MARKER_PX = 46; // diameter of the layer with the most time
const MAX_OPS_SHOWN = 300; // rows of the ops table of one layer
export const DEFAULT_DEPTH = 2;

/**
 * The nodes a cut at `depth` shows (depth 0: the Program): those at that depth and the
 * leaves above it, so together they hold every op once.
 */
export function layerCut(nodes, depth) {
  if (depth <= 0) return nodes.slice(0, 1);
  return nodes.filter(
    (n) => n.depth === depth || (n.depth > 0 && n.depth < depth && !n.children.length),
  );
}

/** The ops of a node's subtree (its leaves' ops), most self time first. */
export function layerOps(nodes, id) {
  const out = [];
  const stack = [id];
  while (stack.length) {
    const node = nodes[stack.pop()];
    if (!node) continue;
    for (const op of node.ops || []) out.push({...op, layer: node.path});
    stack.push(...node.children);
  }
  return out.sort((a, b) => b.self_time_us - a.self_time_us);
}

/**
 * What kind of layer a node is, for its colour: its name without instance numbers
 * ("Qwen2DecoderLayer_13" and "Qwen2DecoderLayer_0" are both "Qwen2DecoderLayer", "block_3"
 * is "block"), or what it stands for: "(no layer)", "(own ops)".
 */
export function layerType(node) {
  if (node.kind !== 'layer') return node.name;
  return node.name.replace(/(_\d+)+$/, '') || node.name;
}

function layerHover(node, memory, roofless) {
  const passes = `forward ${duration(node.forward.self_time_us)} · backward ${duration(node.backward.self_time_us)}`;
  return [
    `<b>${esc(node.path || node.name)}</b>`,
    `self time ${esc(duration(node.self_time_us))} (${esc(pct(node.time_fraction))} of the time) · ${esc(passes)}`,
    `${esc(num(node.op_rows))} ops · ${esc(num(node.flops))} FLOPs · ${esc(num(node.bytes_accessed))} bytes`,
    `performance ${esc(flopRate(node.measured_flop_rate))} · intensity ${esc(num(chartIntensity(node)))} FLOP/byte · ${esc(memory)} ${esc(byteRate(gibToGb(node.hbm_bw)))}`,
    roofless
      ? 'no peaks known: no bound or efficiency'
      : `bound by <b>${esc(boundByLabel(node.bound_by, memory))}</b> · roofline efficiency ${esc(pct(node.roofline_efficiency))}`,
  ].join('<br>');
}

/** The chart: one dot per layer of the cut (area ∝ self time, colour = layer type). */
export function layerFigure({nodes, cut, roofs, colors: c, selectedId, memory}) {
  const plotted = cut.filter((n) => n.kind !== 'idle' && plottable(n));
  const program = nodes[0];
  const points = plotted.map((n) => ({x: chartIntensity(n), y: n.measured_flop_rate * G}));
  const programShown = program && plottable(program);
  if (programShown) points.push({x: chartIntensity(program), y: program.measured_flop_rate * G});
  const range = ranges(points, roofs);
  const {traces, annotations} = roofTraces(roofs, range, c);
  const maxTime = Math.max(...plotted.map((n) => n.self_time_us), 1e-9);
  const sizeref = (2 * maxTime) / (MAX_MARKER_PX * MAX_MARKER_PX);
  const groups = new Map();
  for (const n of plotted) {
    const group = layerType(n);
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group).push(n);
  }
  const styles = categoryStyles([...groups.keys()]);
  // The Program under the layers: it often sits where its biggest layer does.
  if (programShown) {
    traces.push(
      programPoint(
        program,
        {symbol: 'star', size: 20, color: c.program, line: {color: c.paper, width: 1.5}},
        layerHover({...program, path: 'Program (every layer)'}, memory, roofs.none),
      ),
    );
  }
  let first = true;
  for (const [group, list] of groups) {
    const style = styles.get(group);
    traces.push({
      type: 'scatter',
      mode: 'markers',
      name: `${esc(group)} (${list.length})`,
      legendgroup: 'layers',
      legendgrouptitle: first ? {text: 'Layers by type'} : undefined,
      x: list.map(chartIntensity),
      y: list.map((n) => n.measured_flop_rate * G),
      customdata: list.map((n) => n.id),
      text: list.map((n) => layerHover(n, memory, roofs.none)),
      hovertemplate: '%{text}<extra></extra>',
      marker: {
        color: style.color,
        symbol: style.symbol,
        opacity: 0.85,
        size: list.map((n) => Math.max(n.self_time_us, 0)),
        sizemode: 'area',
        sizeref,
        sizemin: 5,
        line: {color: c.paper, width: 0.8},
      },
      meta: {kind: 'layers', group},
    });
    first = false;
  }
  const selected = plotted.find((n) => n.id === selectedId);
  traces.push({
    type: 'scatter',
    mode: 'markers',
    name: 'selected layer',
    showlegend: false,
    hoverinfo: 'skip',
    x: selected ? [chartIntensity(selected)] : [],
    y: selected ? [selected.measured_flop_rate * G] : [],
    marker: {
      symbol: 'circle-open',
      size: 34,
      color: c.highlight,
      line: {width: 3, color: c.highlight},
    },
    meta: {kind: 'highlight', id: selected ? selected.id : -1},
  });
  return {data: traces, layout: baseLayout(range, c, {annotations})};
}

export class LayersView {
  constructor(container) {
    this.container = container;
    this.token = 0;
    this.depth = DEFAULT_DEPTH;
    onThemeChange(() => this.drawChart());
  }

  async show(sel) {
    const token = ++this.token;
    this.sel = sel;
    this.selectedId = -1;
    const label = selectionLabel(sel.run, sel.host, sel.step, sel.device);
    this.container.dataset.state = 'loading';
    this.purge();
    show(this.container, status('loading', `Loading the layers of ${label}…`));
    const plotly = this.Plotly ? Promise.resolve(this.Plotly) : loadPlotly();
    plotly.catch(() => {});
    let data;
    try {
      data = await api.roofline(sel.run, sel.host, sel.step, sel.peaks, sel.device);
    } catch (err) {
      if (token !== this.token) return;
      this.container.dataset.state = 'error';
      show(this.container, status('error', `Could not load ${label}.`, err.message));
      return;
    }
    if (token !== this.token) return;
    this.data = data;
    this.layers = data.layers || {nodes: [], max_depth: 0, notes: []};
    this.nodes = this.layers.nodes;
    this.memory = mainMemory(data.device || {});
    this.roofs = roofModel(data.device || {}, this.nodes);
    this.depth = Math.min(Math.max(this.depth, 1), Math.max(this.layers.max_depth, 1));
    this.expandTo(this.depth);
    this.build(label);
    try {
      this.Plotly = await plotly;
    } catch (err) {
      if (token !== this.token) return;
      if (this.chart)
        show(this.chart, status('error', 'The chart could not be drawn.', err.message));
      this.container.dataset.state = 'ready';
      return;
    }
    if (token !== this.token) return;
    await this.drawChart();
    if (token !== this.token) return;
    this.container.dataset.state = 'ready';
  }

  purge() {
    if (this.chart && this.Plotly) this.Plotly.purge(this.chart);
    this.chart = null;
  }

  /** Nodes above `depth` open, the rest closed. */
  expandTo(depth) {
    this.expanded = new Set(this.nodes.filter((n) => n.depth < depth).map((n) => n.id));
  }

  build(label) {
    const nodes = this.nodes;
    const title = el(
      'header',
      {class: 'view-header'},
      el('h2', {text: 'Roofline Layers'}),
      el('p', {class: 'muted selection-label'}, el('bdi', {text: label})),
    );
    const notes = (this.layers.notes || []).map((text) =>
      el('p', {class: 'note', 'data-note': 'layers', text}),
    );
    if (nodes.length <= 1) {
      show(this.container, title, ...notes, status('empty', 'This selection has no ops.'));
      return;
    }
    this.depthInput = el('input', {
      type: 'number',
      id: 'layer-depth',
      min: 1,
      max: Math.max(this.layers.max_depth, 1),
      value: this.depth,
      'aria-describedby': 'layer-depth-hint',
    });
    // On every edit (typing, the arrows), not on blur: a click elsewhere must not redraw.
    this.depthInput.addEventListener('input', () => {
      if (this.depthInput.value !== '') this.setDepth(Number(this.depthInput.value));
    });
    const controls = el(
      'div',
      {class: 'layer-controls', role: 'group', 'aria-label': 'Layer tree'},
      el(
        'label',
        {class: 'field'},
        el('span', {class: 'field-label', text: 'Depth'}),
        this.depthInput,
      ),
      el('span', {
        class: 'muted',
        id: 'layer-depth-hint',
        text: `of ${this.layers.max_depth}: the chart shows the layers at this depth (and the leaves above it)`,
      }),
      el('button', {
        type: 'button',
        class: 'small',
        id: 'layers-expand',
        text: 'Expand all',
        onclick: () => this.expandAll(true),
      }),
      el('button', {
        type: 'button',
        class: 'small',
        id: 'layers-collapse',
        text: 'Collapse all',
        onclick: () => this.expandAll(false),
      }),
    );
    this.chart = el('div', {
      class: 'chart layer-chart',
      id: 'layer-chart',
      role: 'figure',
      'aria-label': 'Roofline chart of the layers',
    });
    this.chartNote = el('p', {class: 'note', 'data-note': 'layer-points', 'aria-live': 'polite'});
    const name = `layers_${this.sel.run}_${this.sel.host}_${this.sel.step}`;
    this.treeBody = el('tbody');
    const rate = flopUnit(Math.max(0, ...nodes.map((n) => n.measured_flop_rate || 0)));
    this.rate = rate;
    const headers = [
      'Layer',
      'Bound by',
      'Self time',
      'Time %',
      'Forward',
      'Backward',
      rate.unit,
      'FLOP/byte',
      'Roofline %',
      'Ops',
    ];
    const table = el(
      'table',
      {class: 'data-table layer-table', id: 'layer-table'},
      el('caption', {class: 'sr-only', text: 'Layers of the selection'}),
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          headers.map((h, i) => el('th', {scope: 'col', class: i > 1 ? 'num' : '', text: h})),
        ),
      ),
      this.treeBody,
    );
    this.treeBody.addEventListener('click', (event) => this.onTreeClick(event));
    this.treeBody.addEventListener('keydown', (event) => this.onTreeKey(event));
    this.opsPanel = el('div', {id: 'layer-ops', class: 'layer-ops', 'aria-live': 'polite'});
    show(
      this.container,
      title,
      ...notes,
      el(
        'section',
        {class: 'panel', 'aria-labelledby': 'layer-chart-title'},
        el(
          'div',
          {class: 'section-head'},
          el('h3', {id: 'layer-chart-title', text: 'Layers on the roofline'}),
          el('span', {
            class: 'muted',
            text: 'dot area ∝ self time · colour = layer type · ★ = Program · click a dot for its ops',
          }),
          exportButtons('Layer chart export', [
            ['PNG', () => downloadChart(this.Plotly, this.chart, 'png', name)],
            ['SVG', () => downloadChart(this.Plotly, this.chart, 'svg', name)],
          ]),
        ),
        controls,
        this.chartNote,
        this.chart,
      ),
      el(
        'section',
        {class: 'panel', 'aria-labelledby': 'layer-table-title'},
        el(
          'div',
          {class: 'section-head'},
          el('h3', {id: 'layer-table-title', text: 'Layer tree'}),
          el('span', {
            class: 'muted',
            text: 'time is the self time of each layer’s ops (each op once); ▸ opens a layer, a click lists its ops',
          }),
        ),
        el('div', {class: 'table-wrap'}, table),
      ),
      el('section', {class: 'panel', 'aria-labelledby': 'layer-ops-title'}, this.opsPanel),
    );
    this.renderTree();
    this.renderOps();
  }

  setDepth(depth) {
    const max = Math.max(this.layers.max_depth, 1);
    const chosen = Math.min(Math.max(Math.round(depth) || 1, 1), max);
    if (chosen === this.depth && String(chosen) === this.depthInput.value) return null;
    this.depth = chosen;
    this.depthInput.value = this.depth;
    this.expandTo(this.depth);
    this.renderTree();
    return this.drawChart();
  }

  expandAll(open) {
    this.expanded = open
      ? new Set(this.nodes.filter((n) => n.children.length).map((n) => n.id))
      : new Set([0]);
    this.renderTree();
  }

  /** The rows shown: each node whose ancestors are all open. */
  visibleNodes() {
    const out = [];
    const walk = (id) => {
      const node = this.nodes[id];
      out.push(node);
      if (this.expanded.has(id)) for (const child of node.children) walk(child);
    };
    walk(0);
    return out;
  }

  renderTree() {
    const roofless = this.roofs.none;
    const fragment = document.createDocumentFragment();
    for (const node of this.visibleNodes()) {
      const open = this.expanded.has(node.id);
      const toggle = node.children.length
        ? el('button', {
            type: 'button',
            class: 'tree-toggle',
            'data-toggle': node.id,
            'aria-label': `${open ? 'Collapse' : 'Expand'} ${node.path || node.name}`,
            text: open ? '▾' : '▸',
          })
        : el('span', {class: 'tree-toggle leaf', 'aria-hidden': 'true'});
      const tr = el(
        'tr',
        {
          tabindex: '0',
          'data-id': node.id,
          'data-depth': node.depth,
          'aria-level': node.depth + 1,
          'aria-expanded': node.children.length ? String(open) : null,
          class: [
            node.id === this.selectedId ? 'selected' : '',
            `kind-${node.kind.replace(/\W+/g, '-')}`,
          ]
            .join(' ')
            .trim(),
        },
        el(
          'td',
          {class: 'layer-name', style: `--depth: ${node.depth}`, title: node.path || node.name},
          toggle,
          el('span', {text: node.name}),
        ),
        el('td', {text: roofless ? '—' : boundByLabel(node.bound_by, this.memory)}),
        el('td', {class: 'num', text: duration(node.self_time_us)}),
        el('td', {class: 'num', text: pct(node.time_fraction)}),
        el('td', {class: 'num', text: duration(node.forward.self_time_us)}),
        el('td', {class: 'num', text: duration(node.backward.self_time_us)}),
        el('td', {class: 'num', text: num(node.measured_flop_rate / this.rate.scale)}),
        el('td', {class: 'num', text: num(chartIntensity(node))}),
        el('td', {class: 'num', text: roofless ? '—' : pct(node.roofline_efficiency)}),
        el('td', {class: 'num', text: num(node.op_rows)}),
      );
      fragment.append(tr);
    }
    this.treeBody.replaceChildren(fragment);
  }

  onTreeClick(event) {
    const toggle = event.target.closest('[data-toggle]');
    if (toggle) {
      this.toggle(Number(toggle.dataset.toggle));
      return;
    }
    const tr = event.target.closest('tr[data-id]');
    if (tr) this.select(Number(tr.dataset.id));
  }

  onTreeKey(event) {
    const tr = event.target.closest('tr[data-id]');
    if (!tr) return;
    const id = Number(tr.dataset.id);
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      this.select(id);
    } else if (event.key === 'ArrowRight' || event.key === 'ArrowLeft') {
      event.preventDefault();
      const open = event.key === 'ArrowRight';
      if (this.expanded.has(id) !== open && this.nodes[id].children.length) this.toggle(id);
    } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      const next = event.key === 'ArrowDown' ? tr.nextElementSibling : tr.previousElementSibling;
      if (next) {
        event.preventDefault();
        next.focus();
      }
    }
  }

  toggle(id) {
    if (this.expanded.has(id)) this.expanded.delete(id);
    else this.expanded.add(id);
    this.renderTree();
    const again = this.treeBody.querySelector(`tr[data-id="${id}"]`);
    if (again) again.focus();
  }

  /** Selects a layer: its row marked (its ancestors opened), its dot ringed, its ops listed. */
  select(id) {
    this.selectedId = id;
    for (let at = this.nodes[id]; at && at.parent >= 0; at = this.nodes[at.parent])
      this.expanded.add(at.parent);
    this.renderTree();
    this.renderOps();
    this.drawChart();
  }

  renderOps() {
    const node = this.nodes[this.selectedId];
    if (!node) {
      show(
        this.opsPanel,
        el('h3', {id: 'layer-ops-title', text: 'Ops of a layer'}),
        el('p', {
          class: 'muted',
          text: 'Click a layer in the tree or on the chart to list its ops.',
        }),
      );
      return;
    }
    const ops = layerOps(this.nodes, node.id);
    const shown = ops.slice(0, MAX_OPS_SHOWN);
    const notListed = ops.length < node.op_rows ? node.op_rows - ops.length : 0;
    const own = `${node.path ? `${node.path}/` : ''}(own ops)`;
    const subLayer = (op) =>
      op.layer === node.path || op.layer === own
        ? ''
        : op.layer.slice(node.path ? node.path.length + 1 : 0);
    const programOf = (op) => op.program_name || (op.hlo_module_id !== '0' ? op.hlo_module_id : '');
    const withPrograms = shown.some((op) => programOf(op));
    const rows = shown.map((op) =>
      el(
        'tr',
        {},
        el('td', {class: 'name', text: op.name, title: op.op_path || op.name}),
        el('td', {text: op.pass}),
        el('td', {class: 'wrap', text: subLayer(op)}),
        withPrograms ? el('td', {text: programOf(op)}) : null,
        el('td', {class: 'num', text: duration(op.self_time_us)}),
        el('td', {class: 'num', text: num(op.flops)}),
        el('td', {class: 'num', text: num(op.bytes_accessed)}),
      ),
    );
    const headers = [
      'Op',
      'Pass',
      'Sub-layer',
      ...(withPrograms ? ['Program'] : []),
      'Self time',
      'FLOPs',
      'Bytes',
    ];
    const more = ops.length - shown.length + notListed;
    show(
      this.opsPanel,
      el('h3', {id: 'layer-ops-title'}, 'Ops of ', el('bdi', {text: node.path || 'the Program'})),
      el('p', {
        class: 'muted',
        'data-note': 'layer-ops',
        text: `${num(node.op_rows)} ops · ${duration(node.self_time_us)} self time (forward ${duration(node.forward.self_time_us)}, backward ${duration(node.backward.self_time_us)})${more ? ` · ${num(more)} not listed` : ''}`,
      }),
      el(
        'div',
        {class: 'table-wrap'},
        el(
          'table',
          {class: 'data-table compact', id: 'layer-ops-table'},
          el('caption', {class: 'sr-only', text: `Ops of ${node.path || 'the Program'}`}),
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              headers.map((h, i) =>
                el('th', {scope: 'col', class: i >= headers.length - 3 ? 'num' : '', text: h}),
              ),
            ),
          ),
          el('tbody', {}, rows),
        ),
      ),
    );
  }

  async drawChart() {
    if (!this.chart || !this.Plotly) return;
    const cut = layerCut(this.nodes, this.depth);
    const plotted = cut.filter((n) => n.kind !== 'idle' && plottable(n)).length;
    const unplaced = cut.filter((n) => n.kind !== 'idle').length - plotted;
    this.chartNote.textContent =
      `${plotted} layers at depth ${this.depth} on the chart` +
      (unplaced ? `; ${unplaced} without FLOPs or bytes are in the tree only.` : '.');
    const figure = layerFigure({
      nodes: this.nodes,
      cut,
      roofs: this.roofs,
      colors: colors(),
      selectedId: this.selectedId,
      memory: this.memory,
    });
    await plot(
      this.Plotly,
      this.chart,
      figure,
      {
        plotly_click: (event) => {
          const point = event && event.points && event.points[0];
          if (point && point.data.meta && point.data.meta.kind === 'layers')
            this.select(Number(point.customdata));
        },
      },
      'layers',
    );
  }
}
