// The parts every roofline chart shares: log–log axes, a roof per memory, a ceiling per
// compute peak, ridge points, shaded memory-/compute-bound regions.
//
// Units: x is FLOP/byte, y is FLOP/s; a memory roof is y = x · bandwidth with the bandwidth
// in bytes/s (SI, from `peak_gbps`), so it meets a compute peak exactly at the API's ridge
// point (peak GFLOP/s ÷ peak GB/s). Record bandwidths in GiB/s are never mixed in.

import {byteRate, escapeHtml, flopRate, num} from './format.js';
import {ceilingLabel} from './model.js';

const G = 1e9;
const FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

const decadeDown = (v) => 10 ** Math.floor(Math.log10(v));
const decadeUp = (v) => 10 ** Math.ceil(Math.log10(v));

/**
 * Axis ranges (data units) covering the points (x FLOP/byte, y FLOP/s), the ridge points and
 * the ceilings, snapped to whole decades.
 */
export function ranges(points, roofs) {
  const xs = points.map((p) => p.x).filter((v) => v > 0);
  const ys = points.map((p) => p.y).filter((v) => v > 0);
  for (const m of roofs.memories) if (m.ridge > 0) xs.push(m.ridge);
  const top = roofs.ceilings.length ? roofs.ceilings[0].gflops * G : 0;
  if (top > 0) ys.push(top);
  if (!xs.length) xs.push(0.1, 100);
  if (!ys.length) ys.push(1e9, 1e12);
  const x0 = decadeDown(Math.min(...xs) / 3);
  const x1 = decadeUp(Math.max(...xs) * 3);
  // The lowest roof value in range must be visible too, so roofs do not start off-chart.
  const slowest = Math.min(...roofs.memories.map((m) => m.gbps * G), Infinity);
  const roofLow = Number.isFinite(slowest) ? x0 * slowest : Infinity;
  const y0 = decadeDown(Math.min(Math.min(...ys), roofLow) / 3);
  const y1 = decadeUp(Math.max(...ys) * 8); // room above the peak for the ridge labels
  return {x: [x0, x1], y: [y0, y1]};
}

const MEMORY_DASH = ['solid', 'dash', 'dot', 'dashdot', 'longdash', 'longdashdot'];

/** Roof, ceiling, region and label traces, plus ridge-point annotations. */
export function roofTraces(roofs, range, c, {legend = true} = {}) {
  const traces = [];
  const annotations = [];
  const [x0, x1] = range.x;
  const [y0] = range.y;
  const top = roofs.ceilings.length ? roofs.ceilings[0].gflops : 0;
  const fastest = Math.max(...roofs.memories.map((m) => m.gbps), 0);
  const main = roofs.memories[0];

  // Shaded regions (drawn first, under everything): left / right of the main memory's ridge.
  if (main && roofs.peak > 0 && main.ridge > x0 && main.ridge < x1) {
    const peakY = roofs.peak * G;
    const region = (name, x, y, fill) => ({
      type: 'scatter',
      mode: 'lines',
      x,
      y,
      fill: 'toself',
      fillcolor: fill,
      line: {width: 0},
      hoverinfo: 'skip',
      showlegend: false,
      name,
      meta: {kind: 'region'},
    });
    traces.push(
      region(
        'memory-bound region',
        [x0, main.ridge, main.ridge, x0],
        [x0 * main.gbps * G, peakY, y0, y0],
        c.memoryRegion,
      ),
      region(
        'compute-bound region',
        [main.ridge, x1, x1, main.ridge],
        [peakY, peakY, y0, y0],
        c.computeRegion,
      ),
      {
        type: 'scatter',
        mode: 'text',
        hoverinfo: 'skip',
        showlegend: false,
        meta: {kind: 'region-label'},
        x: [Math.sqrt(x0 * main.ridge), Math.sqrt(main.ridge * x1)],
        y: [y0 * 1.6, y0 * 1.6],
        text: [`memory-bound (${escapeHtml(main.name)})`, 'compute-bound'],
        textfont: {color: c.muted, size: 11},
        textposition: 'top center',
      },
    );
  }

  roofs.memories.forEach((m, i) => {
    const xEnd = top > 0 ? top / m.gbps : x1;
    if (xEnd <= x0) return;
    const label = `${m.name} roof, ${byteRate(m.gbps)}${m.noBytes ? ' (no byte counts in profile)' : ''}`;
    traces.push({
      type: 'scatter',
      mode: 'lines',
      name: escapeHtml(label),
      legendgroup: 'roofs',
      legendgrouptitle: i === 0 ? {text: 'Roofs'} : undefined,
      showlegend: legend,
      x: [x0, Math.min(xEnd, x1)],
      y: [x0 * m.gbps * G, Math.min(xEnd, x1) * m.gbps * G],
      line: {
        color: c.roof,
        width: i === 0 ? 2.5 : 1.5,
        dash: m.noBytes ? 'longdashdot' : MEMORY_DASH[i % MEMORY_DASH.length],
      },
      opacity: m.noBytes ? 0.55 : 1,
      hovertemplate: `${escapeHtml(label)}<extra></extra>`,
      meta: {kind: 'roof', memory: m.name, gbps: m.gbps, noBytes: m.noBytes},
    });
  });

  roofs.ceilings.forEach((ceiling) => {
    const xStart = fastest > 0 ? Math.max(ceiling.gflops / fastest, x0) : x0;
    const label = `${ceilingLabel(ceiling)}, ${flopRate(ceiling.gflops)}`;
    traces.push({
      type: 'scatter',
      mode: 'lines',
      name: escapeHtml(label),
      legendgroup: 'roofs',
      showlegend: legend,
      x: [xStart, x1],
      y: [ceiling.gflops * G, ceiling.gflops * G],
      line: {
        color: c.ceiling,
        width: ceiling.main ? 2.5 : 1.2,
        dash: ceiling.main ? 'solid' : 'dot',
      },
      hovertemplate: `${escapeHtml(label)}<extra></extra>`,
      meta: {kind: 'ceiling', gflops: ceiling.gflops, dtypes: ceiling.dtypes},
    });
  });

  // Ridge points: where each memory roof meets the main compute peak; labels above the peak,
  // where no op can be (unless above its roof), stacked so close ridges stay readable.
  const ridges = roofs.memories.filter((m) => m.ridge > 0 && roofs.peak > 0);
  if (ridges.length) {
    traces.push({
      type: 'scatter',
      mode: 'markers',
      name: 'Ridge points',
      legendgroup: 'roofs',
      showlegend: false,
      x: ridges.map((m) => m.ridge),
      y: ridges.map(() => roofs.peak * G),
      marker: {symbol: 'diamond', size: 9, color: c.paper, line: {color: c.roof, width: 2}},
      text: ridges.map((m) => escapeHtml(`${m.name} ridge point: ${num(m.ridge)} FLOP/byte`)),
      hovertemplate: '%{text}<extra></extra>',
      meta: {kind: 'ridge'},
    });
    ridges.forEach((m, i) => {
      annotations.push({
        x: Math.log10(m.ridge),
        y: Math.log10(roofs.peak * G),
        xref: 'x',
        yref: 'y',
        text: escapeHtml(`${m.name} ridge ${num(m.ridge)}`),
        showarrow: true,
        arrowhead: 0,
        arrowwidth: 1,
        arrowcolor: c.muted,
        ax: 0,
        ay: -(18 + 15 * i),
        font: {size: 10, color: c.muted},
        name: 'ridge-label',
      });
    });
  }
  return {traces, annotations};
}

/**
 * Log-axis ticks: a labelled tick per decade and unlabelled ones at 2 and 5 (Plotly's SI
 * prefixes stop at T, and FLOP/s reach P), over a span wide enough to zoom in and out.
 */
function logTicks(low, high, label) {
  const tickvals = [];
  const ticktext = [];
  for (let e = Math.floor(Math.log10(low)) - 3; e <= Math.ceil(Math.log10(high)) + 3; e++) {
    for (const m of [1, 2, 5]) {
      tickvals.push(m * 10 ** e);
      ticktext.push(m === 1 ? label(10 ** e) : '');
    }
  }
  return {tickmode: 'array', tickvals, ticktext};
}

const flopTick = (v) => flopRate(v / G).replace('.000', '');
const intensityTick = (v) => (v >= 1000 ? `${num(v / 1000)}k` : num(v));

/** Layout shared by the roofline charts (theme colours, log axes, fixed ranges). */
export function baseLayout(range, c, extra = {}) {
  return {
    paper_bgcolor: c.paper,
    plot_bgcolor: c.plot,
    font: {family: FONT, color: c.font, size: 12},
    margin: {l: 92, r: 12, t: 12, b: 48},
    hovermode: 'closest',
    dragmode: 'zoom',
    uirevision: 'keep',
    xaxis: {
      type: 'log',
      range: range.x.map(Math.log10),
      title: {text: 'Operational intensity (FLOP/byte)'},
      gridcolor: c.grid,
      linecolor: c.grid,
      zeroline: false,
      ...logTicks(range.x[0], range.x[1], intensityTick),
    },
    yaxis: {
      type: 'log',
      range: range.y.map(Math.log10),
      title: {text: 'Performance'},
      gridcolor: c.grid,
      linecolor: c.grid,
      zeroline: false,
      ...logTicks(range.y[0], range.y[1], flopTick),
    },
    legend: {
      font: {size: 11},
      bgcolor: 'rgba(0,0,0,0)',
      itemclick: 'toggle',
      groupclick: 'toggleitem',
      itemsizing: 'constant',
    },
    hoverlabel: {
      bgcolor: c.hoverBg,
      bordercolor: c.hoverBorder,
      font: {color: c.font, family: FONT, size: 12},
      align: 'left',
    },
    ...extra,
  };
}
