// The Plotly figures: op-level chart, program-level chart, compare chart; and `plot`, which
// draws a figure and wires its events once. Every profile string is escaped before it goes
// into hover text, legend names or annotations (Plotly renders those as HTML).

import {byteRate, duration, escapeHtml as esc, flopRate, gibToGb, num, pct} from './format.js';
import {PALETTE, SYMBOLS} from './theme.js';
import {baseLayout, ranges, roofTraces} from './roofs.js';
import {boundByLabel, chartIntensity, plottable} from './model.js';
import {identityHover} from './op_detail.js';

const G = 1e9;
const MAX_MARKER_PX = 46; // diameter of the op with the most self time
const MAX_STEP_LABELS = 40; // step numbers written next to their points up to this many

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

/** Category -> {color, symbol}: Okabe–Ito colours, then new symbols after 8 categories. */
export function categoryStyles(categories) {
  const styles = new Map();
  categories.forEach((category, i) => {
    styles.set(category, {
      color: PALETTE[i % PALETTE.length],
      symbol: SYMBOLS[Math.floor(i / PALETTE.length) % SYMBOLS.length],
    });
  });
  return styles;
}

/**
 * The op-level chart: one dot per plottable op (area ∝ self time, colour by category), the
 * Program as a star, roofs, ridge points, regions, and a highlight ring for the chosen op.
 */
export function opFigure({rows, program, roofs, styles, colors: c, selectedKey, memory = 'HBM'}) {
  const plotted = rows.filter((row) => row.plottable);
  const points = plotted.map((row) => ({x: row.intensity, y: row.flopRate * G}));
  const programPlottable = program && plottable(program);
  if (programPlottable)
    points.push({x: chartIntensity(program), y: program.measured_flop_rate * G});
  const range = ranges(points, roofs);
  const {traces, annotations} = roofTraces(roofs, range, c);
  const maxSelf = Math.max(...plotted.map((row) => row.selfTimeUs), 1e-9);
  const sizeref = (2 * maxSelf) / (MAX_MARKER_PX * MAX_MARKER_PX);

  const byCategory = new Map();
  for (const row of plotted) {
    if (!byCategory.has(row.category)) byCategory.set(row.category, []);
    byCategory.get(row.category).push(row);
  }
  let first = true;
  for (const [category, list] of byCategory) {
    const style = styles.get(category) || {color: PALETTE[7], symbol: 'circle'};
    traces.push({
      type: 'scatter',
      mode: 'markers',
      name: `${esc(category || 'uncategorized')} (${list.length})`,
      legendgroup: 'ops',
      legendgrouptitle: first ? {text: 'Ops by category'} : undefined,
      x: list.map((row) => row.intensity),
      y: list.map((row) => row.flopRate * G),
      customdata: list.map((row) => row.key),
      text: list.map((row) => opHover(row, roofs.none)),
      hovertemplate: '%{text}<extra></extra>',
      marker: {
        color: style.color,
        symbol: style.symbol,
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
      meta: {kind: 'ops', category},
    });
    first = false;
  }
  if (programPlottable) {
    traces.push({
      type: 'scatter',
      mode: 'markers',
      name: 'Program',
      legendgroup: 'program',
      x: [chartIntensity(program)],
      y: [program.measured_flop_rate * G],
      marker: {symbol: 'star', size: 20, color: c.program, line: {color: c.paper, width: 1.5}},
      text: [programHover('Program (the whole selection)', program, memory, roofs.none)],
      hovertemplate: '%{text}<extra></extra>',
      meta: {kind: 'program'},
    });
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
  return {data: traces, layout: baseLayout(range, c, {annotations})};
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
  const {traces, annotations} = roofTraces(roofs, range, c, {legend: false});
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
  const layout = baseLayout(range, c, {annotations, showlegend: true});
  layout.legend = {...layout.legend, orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom'};
  layout.margin = {...layout.margin, t: 28};
  return {data: traces, layout};
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
  const {traces, annotations} = roofTraces(roofs, range, c);
  const cloud = (name, list, color, open, kind) => ({
    type: 'scatter',
    mode: 'markers',
    name: esc(name),
    legendgroup: kind,
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
      legendgroup: 'program',
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
  const arrow = (from, to, width, color, name) => ({
    x: Math.log10(to.x),
    y: Math.log10(to.y),
    ax: Math.log10(from.x),
    ay: Math.log10(from.y),
    xref: 'x',
    yref: 'y',
    axref: 'x',
    ayref: 'y',
    text: '',
    showarrow: true,
    arrowhead: 2,
    arrowsize: 1,
    arrowwidth: width,
    arrowcolor: color,
    standoff: 4,
    name,
  });
  for (const p of pairs.slice(0, maxArrows))
    annotations.push(arrow(p.a, p.b, 1.2, c.arrow, 'op-arrow'));
  if (progA && progB) annotations.push(arrow(progA, progB, 2.2, c.program, 'program-arrow'));
  return {data: traces, layout: baseLayout(range, c, {annotations})};
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

/**
 * Draws (or redraws, keeping the user's zoom) a figure into `node`; `handlers` maps Plotly
 * event names (plotly_click, plotly_selected, ...) to functions, attached on the first draw.
 */
export async function plot(Plotly, node, figure, handlers = {}, filename = 'roofline') {
  const config = {...CONFIG, toImageButtonOptions: {filename, scale: 2}};
  for (const pending of node.querySelectorAll(':scope > .chart-pending')) pending.remove();
  const drawn = Plotly.react(node, figure.data, figure.layout, config);
  // Plotly has set up node.on synchronously; plotly_afterplot comes just before `drawn`
  // resolves, so listeners attached here see the first one.
  const wired = node.rooflineHandlers || {};
  for (const event of Object.keys(handlers)) {
    if (!wired[event]) node.on(event, (...args) => node.rooflineHandlers[event](...args));
  }
  node.rooflineHandlers = {...wired, ...handlers};
  await drawn;
  return node;
}
