// The Plotly figures: op-level chart, program-level chart, compare chart; and `plot`, which
// draws a figure and wires its events once. Every profile string is escaped before it goes
// into hover text, legend names or annotations (Plotly renders those as HTML).

import {byteRate, duration, escapeHtml as esc, flopRate, gibToGb, num, pct} from './format.js';
import {annotations as labelAnnotations, frame, place, textBox} from './chart_labels.js';
import {PALETTE, categoryStyle, isDark} from './theme.js';
import {baseLayout, ranges, roofTraces} from './roofs.js';
import {boundByLabel, chartIntensity, plottable} from './model.js';
import {identityHover} from './op_detail.js';
import {legendGroups, staticFigure} from './static_chart.js';

const G = 1e9;
const MAX_MARKER_PX = 46; // diameter of the op with the most self time
const MIN_MARKER_PX = 5; // the smallest dot's radius
const MAX_STEP_LABELS = 40;
const MIN_ARROW_PX = 16; // compare arrows are at least this long on screen // step numbers written next to their points up to this many

const EXTRA_MEMORIES = [
  ['vmem_read_bw', 'VMEM read'],
  ['vmem_write_bw', 'VMEM write'],
  ['cmem_read_bw', 'CMEM read'],
  ['cmem_write_bw', 'CMEM write'],
];

const NO_PEAKS_HOVER = 'no peaks known: no bound, efficiency or wasted time';

/** Hover text of one op: every metric, profile strings escaped; `roofless`: no peaks known. */
export function opHover(row, roofless = false) {
  const r = row.record;
  const memory = row.memoryName || 'HBM';
  const lines = [
    `<b>${esc(row.name)}</b>`,
    `${esc(row.category)} · program ${esc(row.programLabel || row.program)}`,
    ...identityHover(row), // shapes, framework op, source line
    `self time ${esc(duration(row.selfTimeUs))} (${esc(pct(row.share))} of the time) · total ${esc(duration(row.timeUs))} · ran ${esc(num(row.occurrences))}×`,
    `performance ${esc(flopRate(row.flopRate))} · intensity ${esc(num(row.intensity))} FLOP/byte`,
    `${esc(memory)} ${esc(byteRate(row.hbmGbps))} · all memory ${esc(byteRate(row.memoryGbps))}`,
  ];
  const extra = EXTRA_MEMORIES.filter(([field]) => (r[field] || 0) > 0).map(
    ([field, name]) => `${name} ${esc(byteRate(gibToGb(r[field])))}`,
  );
  if (extra.length) lines.push(extra.join(' · '));
  if (roofless) {
    lines.push(`dtype ${esc(row.dtype || 'unknown')} · ${NO_PEAKS_HOVER}`);
  } else {
    lines.push(
      row.dtypeNote
        ? `${esc(row.memoryName)} at ${esc(pct(row.memoryEfficiency))} of its peak · no compute roof`
        : `bound by <b>${esc(row.boundBy)}</b> · roofline efficiency ${esc(pct(row.efficiency))}`,
      row.dtypeNote
        ? `dtype ${esc(row.dtype)} · ${esc(row.dtypeNote)}`
        : `dtype ${esc(row.dtype || 'unknown')} · ${esc(pct(row.dtypeComputeEfficiency))} of its compute peak ` +
            `(${esc(flopRate(row.dtypePeak))}) · dtype-aware efficiency ${esc(pct(row.dtypeEfficiency))}`,
      row.judged === false
        ? `not judged by the roofline: ${esc(row.classWords || row.rooflineClass)}`
        : `wasted time ${esc(duration(row.wastedUs))} (rank ${esc(num(row.wastedRank))})`,
    );
  }
  if (row.aboveRoof) lines.push('<b>above its roof by more than 5%</b>');
  lines.push(`<i>${esc(row.guidance)}</i>`);
  return lines.join('<br>');
}

function programHover(label, r, memory = 'HBM', roofless = false) {
  return [
    `<b>${esc(label)}</b>`,
    `time ${esc(duration(r.total_time_in_us || 0))} · performance ${esc(flopRate(r.measured_flop_rate || 0))}`,
    `intensity ${esc(num(chartIntensity(r)))} FLOP/byte · ${esc(memory)} ${esc(byteRate(gibToGb(r.hbm_bw || 0)))}`,
    roofless
      ? NO_PEAKS_HOVER
      : `bound by <b>${esc(boundByLabel(r.bound_by, memory))}</b> · roofline efficiency ${esc(pct(r.roofline_efficiency || 0))}`,
  ].join('<br>');
}

/**
 * Category -> {color, symbol} in the current theme: one fixed style per category in every
 * view and run (theme.categoryStyle), whatever else the selection holds.
 */
/** The Program's point (legend group 'program'): its marker and hover text are the view's. */
export function programPoint(program, marker, hover) {
  return {
    type: 'scatter',
    mode: 'markers',
    name: 'Program',
    legendgroup: 'program',
    x: [chartIntensity(program)],
    y: [program.measured_flop_rate * G],
    marker,
    text: [hover],
    hovertemplate: '%{text}<extra></extra>',
    meta: {kind: 'program'},
  };
}

export function categoryStyles(categories) {
  return new Map(categories.map((category) => [category, categoryStyle(category, isDark())]));
}

/**
 * Marker sizes of op rows: area ∝ self time, the op with the most MAX_MARKER_PX across;
 * `radius(row)` in px as Plotly draws it (sizemin is a radius).
 */
function markerSizes(rows) {
  const maxSelf = Math.max(...rows.map((row) => row.selfTimeUs), 1e-9);
  const sizeref = (2 * maxSelf) / (MAX_MARKER_PX * MAX_MARKER_PX);
  const radius = (row) =>
    Math.max(Math.sqrt(Math.max(row.selfTimeUs, 0) / (2 * sizeref)), MIN_MARKER_PX);
  return {sizeref, radius};
}

/**
 * The op-level chart: one dot per plottable op (area ∝ self time, colour and symbol by
 * category, the same in every view and run), the Program as a hollow star on top, roofs,
 * ridge points, regions, labels on the chart, and a highlight ring for the chosen op. The
 * dots are one trace, largest first, so a small op is never hidden behind a big one; the
 * legend's category items (their own empty traces) show and hide a category (`plot`).
 */
export function opFigure({rows, program, roofs, colors: c, selectedKey, memory = 'HBM'}) {
  const plotted = rows.filter((row) => row.plottable);
  const points = plotted.map((row) => ({x: row.intensity, y: row.flopRate * G}));
  const programPlottable = program && plottable(program);
  if (programPlottable)
    points.push({x: chartIntensity(program), y: program.measured_flop_rate * G});
  const range = ranges(points, roofs);
  const {traces, labels} = roofTraces(roofs, range, c);
  const {sizeref, radius} = markerSizes(plotted);
  const style = (category) => categoryStyle(category, Boolean(c.dark));

  const counts = new Map();
  for (const row of plotted) counts.set(row.category, (counts.get(row.category) || 0) + 1);
  [...counts.keys()].forEach((category, i) => {
    const {color, symbol} = style(category);
    traces.push({
      type: 'scatter',
      mode: 'markers',
      name: `${esc(category || 'uncategorized')} (${counts.get(category)})`,
      legendgroup: 'ops',
      legendgrouptitle: i === 0 ? {text: 'Ops by category'} : undefined,
      x: [null],
      y: [null],
      hoverinfo: 'skip',
      marker: {color, symbol, size: 10, line: {color: c.paper, width: 0.8}},
      meta: {kind: 'category', category},
    });
  });
  const list = [...plotted].sort((a, b) => b.selfTimeUs - a.selfTimeUs);
  const styles = list.map((row) => style(row.category));
  traces.push({
    type: 'scatter',
    mode: 'markers',
    name: 'ops',
    showlegend: false,
    x: list.map((row) => row.intensity),
    y: list.map((row) => row.flopRate * G),
    customdata: list.map((row) => row.key),
    text: list.map((row) => opHover(row, roofs.none)),
    hovertemplate: '%{text}<extra></extra>',
    marker: {
      color: styles.map((s) => s.color),
      symbol: styles.map((s) => s.symbol),
      opacity: 0.85,
      size: list.map((row) => Math.max(row.selfTimeUs, 0)),
      sizemode: 'area',
      sizeref,
      sizemin: 5,
      line: {
        color: list.map((row) => (row.aboveRoof ? c.aboveRoof : c.paper)),
        width: list.map((row) => (row.aboveRoof ? 3 : 0.8)),
      },
    },
    selected: {marker: {opacity: 1}},
    unselected: {marker: {opacity: 0.25}},
    meta: {kind: 'ops', categories: list.map((row) => row.category)},
  });
  if (programPlottable) {
    traces.push(
      programPoint(
        program,
        {symbol: 'star-open', size: 20, color: c.program, line: {color: c.program, width: 2}},
        programHover('Program (the whole selection)', program, memory, roofs.none),
      ),
    );
  }
  const selected = plotted.find((row) => row.key === selectedKey);
  traces.push({
    type: 'scatter',
    mode: 'markers',
    name: 'selected op',
    showlegend: false,
    hoverinfo: 'skip',
    x: selected ? [selected.intensity] : [],
    y: selected ? [selected.flopRate * G] : [],
    marker: {
      symbol: 'circle-open',
      size: 34,
      color: c.highlight,
      line: {width: 3, color: c.highlight},
    },
    meta: {kind: 'highlight', key: selected ? selected.key : ''},
  });
  const dots = (f) => [
    // The larger a dot (more time), the more a label must not cover it.
    ...list.map((row) => [...f.px(row.intensity, row.flopRate * G), radius(row), radius(row) / 5]),
    ...(programPlottable
      ? [[...f.px(chartIntensity(program), program.measured_flop_rate * G), 10, 4]]
      : []),
  ];
  return {
    data: traces,
    layout: baseLayout(range, c),
    labels: (f) => {
      const roof = labels(f);
      return {labels: roof.labels, obstacles: [...roof.obstacles, ...dots(f)]};
    },
    legend: 'auto',
  };
}

/** The program-level chart: Total, Average step and each step as points. */
export function programFigure({
  points,
  roofs,
  colors: c,
  selectedStep,
  incomplete,
  memory = 'HBM',
}) {
  const shown = points.filter((p) => plottable(p.record));
  const xy = shown.map((p) => ({x: chartIntensity(p.record), y: p.record.measured_flop_rate * G}));
  const labelSteps = shown.length <= MAX_STEP_LABELS; // past this, numbers would cover the points
  const range = ranges(xy, roofs);
  const {traces, labels} = roofTraces(roofs, range, c, {legend: false});
  const groups = [
    ['Total', (p) => p.step === 'total', 'star', 18, c.program],
    ['Average step', (p) => p.step === 'average', 'diamond', 13, PALETTE[4]],
    ['Steps', (p) => p.step !== 'total' && p.step !== 'average', 'circle', 10, PALETTE[3]],
  ];
  for (const [name, test, symbol, size, color] of groups) {
    const list = shown.filter(test);
    if (!list.length) continue;
    traces.push({
      type: 'scatter',
      mode: 'markers+text',
      name,
      legendgroup: 'program',
      x: list.map((p) => chartIntensity(p.record)),
      y: list.map((p) => p.record.measured_flop_rate * G),
      text: list.map((p) =>
        p.step === 'total' || p.step === 'average' || !labelSteps ? '' : p.step,
      ),
      textposition: 'top center',
      textfont: {size: 10, color: c.muted},
      hovertext: list.map((p) =>
        programHover(
          p.label + (incomplete.has(p.step) ? ' (incomplete)' : ''),
          p.record,
          memory,
          roofs.none,
        ),
      ),
      hovertemplate: '%{hovertext}<extra></extra>',
      customdata: list.map((p) => p.step),
      marker: {
        symbol: list.map((p) => (incomplete.has(p.step) ? `${symbol}-open` : symbol)),
        size,
        color,
        line: {
          color: list.map((p) => (p.step === selectedStep ? c.highlight : c.paper)),
          width: list.map((p) => (p.step === selectedStep ? 3 : 1)),
        },
      },
      meta: {kind: 'program-points'},
    });
  }
  // The selected step (or Total, or Average) ringed on top of everything, always drawn.
  const chosen = shown.find((p) => p.step === selectedStep);
  traces.push({
    type: 'scatter',
    mode: 'markers',
    name: 'Selected',
    showlegend: Boolean(chosen),
    hoverinfo: 'skip',
    x: chosen ? [chartIntensity(chosen.record)] : [],
    y: chosen ? [chosen.record.measured_flop_rate * G] : [],
    marker: {
      symbol: 'circle-open',
      size: 26,
      color: c.highlight,
      line: {width: 3, color: c.highlight},
    },
    meta: {kind: 'program-selected', step: chosen ? chosen.step : ''},
  });
  const layout = baseLayout(range, c, {showlegend: true});
  layout.legend = {...layout.legend, orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom'};
  layout.margin = {...layout.margin, t: 28};
  const dots = (f) =>
    shown.map((p) => [...f.px(chartIntensity(p.record), p.record.measured_flop_rate * G), 7]);
  return {
    data: traces,
    layout,
    labels: (f) => {
      const roof = labels(f);
      return {labels: roof.labels, obstacles: [...roof.obstacles, ...dots(f)]};
    },
  };
}

/** The compare chart: A and B point clouds, an arrow from A to B per matched op. */
export function compareFigure({
  pairs,
  onlyA,
  onlyB,
  programs,
  roofs,
  colors: c,
  labels,
  maxArrows,
}) {
  const xy = [];
  for (const p of pairs) xy.push({x: p.a.x, y: p.a.y}, {x: p.b.x, y: p.b.y});
  for (const p of [...onlyA, ...onlyB]) xy.push(p);
  for (const p of programs) if (p) xy.push(p);
  const range = ranges(xy, roofs);
  const {traces, labels: roofLabels} = roofTraces(roofs, range, c);
  const cloud = (name, list, color, open, kind) => ({
    type: 'scatter',
    mode: 'markers',
    name: esc(name),
    legendgroup: 'sides', // A, B and the Program in one legend group: one column below
    legendgrouptitle: kind === 'compare-a' ? {text: 'A → B'} : undefined,
    x: list.map((p) => p.x),
    y: list.map((p) => p.y),
    text: list.map((p) => p.hover),
    hovertemplate: '%{text}<extra></extra>',
    marker: {
      symbol: open ? 'circle-open' : 'circle',
      size: 9,
      color,
      line: {width: open ? 2 : 0.8, color: open ? color : c.paper},
    },
    meta: {kind},
  });
  traces.push(
    cloud(`A: ${labels.a}`, [...pairs.map((p) => p.a), ...onlyA], c.a, true, 'compare-a'),
    cloud(`B: ${labels.b}`, [...pairs.map((p) => p.b), ...onlyB], c.b, false, 'compare-b'),
  );
  const [progA, progB] = programs;
  if (progA && progB) {
    traces.push({
      type: 'scatter',
      mode: 'markers',
      name: 'Program A → B',
      legendgroup: 'sides',
      x: [progA.x, progB.x],
      y: [progA.y, progB.y],
      text: [progA.hover, progB.hover],
      hovertemplate: '%{text}<extra></extra>',
      marker: {
        symbol: ['star-open', 'star'],
        size: 18,
        color: [c.a, c.b],
        line: {width: 2, color: [c.a, c.paper]},
      },
      meta: {kind: 'compare-program'},
    });
  }
  // An arrow A → B in data coordinates; one shorter than MIN_ARROW_PX on screen keeps its
  // head at B and its direction, with a tail MIN_ARROW_PX long, so small changes show.
  const arrow = (from, to, width, color, name, f) => {
    const common = {
      x: Math.log10(to.x),
      y: Math.log10(to.y),
      xref: 'x',
      yref: 'y',
      text: '',
      showarrow: true,
      arrowhead: 2,
      arrowsize: 1,
      arrowwidth: width,
      arrowcolor: color,
      standoff: 4,
      name,
    };
    const [fx, fy] = f.px(from.x, from.y);
    const [tx, ty] = f.px(to.x, to.y);
    const length = Math.hypot(tx - fx, ty - fy);
    if (length >= MIN_ARROW_PX || !(length > 0.05)) {
      return {...common, ax: Math.log10(from.x), ay: Math.log10(from.y), axref: 'x', ayref: 'y'};
    }
    const scale = MIN_ARROW_PX / length;
    return {
      ...common,
      ax: (fx - tx) * scale,
      ay: (fy - ty) * scale,
      axref: 'pixel',
      ayref: 'pixel',
      standoff: 3,
    };
  };
  const arrows = (f) => {
    const list = pairs.slice(0, maxArrows).map((p) => arrow(p.a, p.b, 1.2, c.arrow, 'op-arrow', f));
    if (progA && progB) list.push(arrow(progA, progB, 2.2, c.program, 'program-arrow', f));
    return list;
  };
  const dots = (f) => xy.map((p) => [...f.px(p.x, p.y), 5]);
  return {
    data: traces,
    layout: baseLayout(range, c),
    labels: (f) => {
      const roof = roofLabels(f);
      return {
        labels: roof.labels,
        obstacles: [...roof.obstacles, ...dots(f)],
        annotations: arrows(f),
      };
    },
    legend: 'auto',
  };
}

// Nothing leaves the machine: no share/cloud/edit buttons or links, no server to send to.
const CONFIG = {
  displaylogo: false,
  responsive: true,
  showLink: false,
  showSendToCloud: false,
  showEditInChartStudio: false,
  plotlyServerURL: '',
  modeBarButtonsToRemove: ['lasso2d', 'autoScale2d', 'sendChartToCloud', 'sendDataToCloud'],
};

const LEGEND_ROW_PX = 19; // a legend line
const LEGEND_SYMBOL_PX = 46; // a legend item's symbol and its gaps
const LEGEND_FONT_PX = 11;
const MIN_PLOT_SHARE = 0.6; // the plot's least share of the chart's width (else legend below)
const AXIS_TITLE_PX = 48; // the bottom margin: tick labels and the x-axis title
const DEFAULT_HEIGHT_PX = 460;

const itemWidth = (trace) => textBox(trace.name, LEGEND_FONT_PX)[0] + LEGEND_SYMBOL_PX;
const groupWidth = (g) =>
  Math.max(...g.items.map(itemWidth), g.title ? textBox(g.title, LEGEND_FONT_PX + 1)[0] : 0);

/**
 * Where a figure's legend goes in a chart `width` px wide: at the right while the plot keeps
 * MIN_PLOT_SHARE of the width, else below the plot, its groups side by side (the chart then
 * grows by the legend's height, so the plot keeps its own). Returns layout parts.
 */
export function legendPlacement(data, width, height, margin, measured) {
  const groups = legendGroups(data);
  if (!groups.length) return {side: 'none', margin, height};
  const right = Math.max(...groups.map(groupWidth)) + 14;
  if (width - margin.l - right >= MIN_PLOT_SHARE * width) {
    return {
      side: 'right',
      height,
      margin: {...margin, r: right + 8},
      legend: {orientation: 'v', x: 1, xanchor: 'left', xref: 'paper', y: 1, yanchor: 'top'},
    };
  }
  // Below: groups side by side, wrapped into rows as Plotly does.
  let rowWidth = 0;
  let rowHeight = 0;
  let total = 0;
  for (const g of groups) {
    const w = groupWidth(g) + 24;
    const lines = g.items.reduce((n, trace) => n + trace.name.split('<br>').length, 0);
    const h = (lines + (g.title ? 1 : 0)) * LEGEND_ROW_PX;
    if (rowWidth && rowWidth + w > width - 16) {
      total += rowHeight;
      rowWidth = 0;
      rowHeight = 0;
    }
    rowWidth += w;
    rowHeight = Math.max(rowHeight, h);
  }
  total += rowHeight + 10;
  if (measured) total = measured;
  return {
    side: 'below',
    legendHeight: total,
    height: height + total,
    margin: {...margin, b: margin.b + total + 6},
    legend: {
      orientation: 'h',
      x: 0,
      xanchor: 'left',
      xref: 'paper',
      y: 0,
      yanchor: 'bottom',
      yref: 'container',
    },
  };
}

/** The figure's data with the categories the user hid (legend) out of the ops trace. */
function withHidden(data, hidden) {
  if (!hidden || !hidden.size) return data;
  return data.map((t) => {
    const meta = t.meta || {};
    if (meta.kind === 'category' && hidden.has(meta.category)) return {...t, visible: 'legendonly'};
    if (meta.kind !== 'ops' || !meta.categories) return t;
    const shown = meta.categories.map((category) => !hidden.has(category));
    return {
      ...t,
      x: t.x.map((v, i) => (shown[i] ? v : null)),
      y: t.y.map((v, i) => (shown[i] ? v : null)),
    };
  });
}

/** The labels and arrows of a figure for a plot frame {x, y (log10 ranges), w, h}. */
function labelLayer(figure, geometry) {
  if (!figure.labels || !(geometry.w > 0) || !(geometry.h > 0)) return [];
  const f = frame(geometry);
  const {labels, obstacles = [], annotations = []} = figure.labels(f);
  return [...annotations, ...labelAnnotations(place(labels, f, obstacles), f)];
}

/** The figure's layout for a chart of this size: legend placed, labels written. */
function fitted(figure, width, height, seen = {}) {
  const layout = {...figure.layout};
  const margin = layout.margin || {l: 92, r: 12, t: 12, b: AXIS_TITLE_PX};
  const fit =
    figure.legend === 'auto'
      ? legendPlacement(figure.data, width, height, margin, seen.legendHeight)
      : {side: 'fixed', margin: seen.margin || margin, height};
  layout.margin = fit.margin;
  layout.height = fit.height;
  if (fit.legend) layout.legend = {...layout.legend, ...fit.legend};
  const geometry = {
    x: layout.xaxis.range,
    y: layout.yaxis.range,
    w: width - fit.margin.l - fit.margin.r,
    h: fit.height - fit.margin.t - fit.margin.b,
  };
  layout.annotations = labelLayer(figure, geometry);
  return {layout, fit, labelKey: labelKey(geometry)};
}

const rounded = (v) => Math.round(v * 100) / 100;

/** What a figure's labels were placed for: its axes' ranges and plot size, rounded. */
function labelKey(geometry) {
  return JSON.stringify([...geometry.x, ...geometry.y, geometry.w, geometry.h].map(rounded));
}

/** Rewrites the labels for the plot as drawn (its real size, the user's zoom). */
async function relabel(Plotly, node) {
  const figure = node.rooflineFigure;
  const full = node._fullLayout;
  if (!figure || !full || !full._size || !full.xaxis || !full.yaxis) return;
  const geometry = {
    x: full.xaxis.range.slice(),
    y: full.yaxis.range.slice(),
    w: full._size.w,
    h: full._size.h,
  };
  const key = labelKey(geometry);
  if (key === node.rooflineLabelKey) return;
  node.rooflineLabelKey = key;
  await Plotly.relayout(node, {annotations: labelLayer(figure, geometry)});
}

// How Plotly drew a chart's legend and frame, by `legendKey`: the height of a legend below
// the plot, or the margins it widened for a legend above; a step's chart (a new node) with
// the last one's legend is drawn once, its labels placed once, not again for Plotly's frame.
const FRAMES_SEEN = new Map();
const FRAMES_KEPT = 64;

/** Draws node.rooflineFigure for the chart's width (see `plot`). */
async function draw(Plotly, node, legendHeight) {
  const figure = node.rooflineFigure;
  const width = chartWidth(node);
  const frameAs = legendKey(figure.data, width);
  const seen = FRAMES_SEEN.get(frameAs) || {};
  const {
    layout,
    fit,
    labelKey: placedFor,
  } = fitted(figure, width, node.rooflineBaseHeight, {
    ...seen,
    legendHeight: legendHeight ?? seen.legendHeight,
  });
  node.style.height = `${layout.height}px`;
  node.rooflineFit = {side: fit.side, width, legendHeight: fit.legendHeight};
  node.rooflineLabelKey = placedFor; // placed again only where Plotly's frame differs
  await Plotly.react(
    node,
    withHidden(figure.data, node.rooflineHidden),
    layout,
    node.rooflineConfig,
  );
  const full = node._fullLayout;
  if (FRAMES_SEEN.size >= FRAMES_KEPT) FRAMES_SEEN.clear();
  if (fit.side === 'fixed' && full && full._size) {
    const {l, r, t, b} = full._size; // a legend above the plot widens the top margin
    FRAMES_SEEN.set(frameAs, {margin: {...fit.margin, l, r, t, b}});
  }
  // A legend below the plot taller (or shorter) than foreseen: the chart takes its height.
  const legend = full && full.legend;
  if (fit.side === 'below' && legend && legend._height > 0) {
    const measured = Math.ceil(legend._height) + 10;
    FRAMES_SEEN.set(frameAs, {legendHeight: measured});
    if (legendHeight === undefined && Math.abs(measured - fit.legendHeight) > 4) {
      await draw(Plotly, node, measured);
      return;
    }
  }
  await relabel(Plotly, node);
}

/** What a legend's height depends on: the chart's width, the legend's groups and items. */
function legendKey(data, width) {
  const groups = legendGroups(data).map((g) => [g.title, g.items.map((t) => t.name)]);
  return JSON.stringify([width, groups]);
}

/** The chart's width as Plotly takes it (its computed width, rounded). */
function chartWidth(node) {
  return Math.round(node.getBoundingClientRect().width) || node.clientWidth || 800;
}

/**
 * The first view of a figure while Plotly loads: the layout `plot` will give Plotly (legend
 * placed, labels written) drawn as a plain SVG (static_chart.js) over the chart's place,
 * removed once Plotly has drawn under it. Drawn again on each call (the filters changed).
 */
export function drawStatic(node, figure) {
  for (const pending of node.querySelectorAll(':scope > .chart-pending')) pending.remove();
  if (!node.rooflineBaseHeight) node.rooflineBaseHeight = node.clientHeight || DEFAULT_HEIGHT_PX;
  const width = chartWidth(node);
  const {layout} = fitted(figure, width, node.rooflineBaseHeight);
  node.style.height = `${layout.height}px`;
  const holder = document.createElement('div');
  holder.className = 'chart-static';
  holder.append(staticFigure(withHidden(figure.data, node.rooflineHidden), layout, width));
  for (const old of node.querySelectorAll(':scope > .chart-static')) old.remove();
  node.append(holder);
  return holder;
}

/**
 * Draws (or redraws, keeping the user's zoom) a figure into `node`; `handlers` maps Plotly
 * event names (plotly_click, plotly_selected, ...) to functions, attached on the first draw.
 * The figure's legend is placed for the chart's width, its labels for the plot's frame
 * (again after a zoom or a resize), and the legend's category items show and hide their ops.
 */
export async function plot(Plotly, node, figure, handlers = {}, filename = 'roofline') {
  for (const pending of node.querySelectorAll(':scope > .chart-pending')) pending.remove();
  if (!node.rooflineBaseHeight) node.rooflineBaseHeight = node.clientHeight || DEFAULT_HEIGHT_PX;
  node.rooflineFigure = figure;
  node.rooflineConfig = {...CONFIG, toImageButtonOptions: {filename, scale: 2}};
  const drawn = draw(Plotly, node);
  // Plotly has set up node.on synchronously; plotly_afterplot comes just before the first
  // draw resolves, so listeners attached here see the first one.
  const wired = node.rooflineHandlers || {};
  for (const event of Object.keys(handlers)) {
    if (!wired[event]) node.on(event, (...args) => node.rooflineHandlers[event](...args));
  }
  node.rooflineHandlers = {...wired, ...handlers};
  if (!node.rooflineWired) {
    node.rooflineWired = true;
    node.on('plotly_afterplot', () => Promise.resolve().then(() => refit(Plotly, node)));
    node.on('plotly_legendclick', (event) => toggleCategory(Plotly, node, event, false));
    node.on('plotly_legenddoubleclick', (event) => toggleCategory(Plotly, node, event, true));
  }
  await drawn;
  // Plotly's chart is under the first view (drawStatic): the one chart left is Plotly's.
  for (const first of node.querySelectorAll(':scope > .chart-static')) first.remove();
  return node;
}

/** After a resize: the legend moved when the width asks for it, the labels rewritten. */
async function refit(Plotly, node) {
  const fit = node.rooflineFit;
  if (!fit || !node.rooflineFigure || !node._fullLayout) return;
  const width = node.clientWidth;
  if (width && Math.abs(width - fit.width) > 1) {
    const {fit: next} = fitted(node.rooflineFigure, width, node.rooflineBaseHeight);
    if (next.side !== fit.side) {
      await draw(Plotly, node);
      return;
    }
    node.rooflineFit = {...fit, width};
  }
  await relabel(Plotly, node);
}

/**
 * A click on a category's legend item shows or hides its ops (a double click shows only
 * that category, or all again); other items keep Plotly's own behaviour.
 */
function toggleCategory(Plotly, node, event, only) {
  const trace = event && event.data && event.data[event.curveNumber];
  const meta = trace && trace.meta;
  if (!meta || meta.kind !== 'category') return true;
  const all = node.rooflineFigure.data
    .filter((t) => t.meta && t.meta.kind === 'category')
    .map((t) => t.meta.category);
  const hidden = new Set(node.rooflineHidden || []);
  if (only) {
    const isolated = hidden.size === all.length - 1 && !hidden.has(meta.category);
    hidden.clear();
    if (!isolated) for (const category of all) if (category !== meta.category) hidden.add(category);
  } else if (hidden.has(meta.category)) hidden.delete(meta.category);
  else hidden.add(meta.category);
  node.rooflineHidden = hidden;
  draw(Plotly, node);
  return false;
}
