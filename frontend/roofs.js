// The parts every roofline chart shares: log–log axes, a roof per memory, a ceiling per
// compute peak, ridge points, shaded memory-/compute-bound regions.
//
// Units: x is FLOP/byte, y is FLOP/s; a memory roof is y = x · bandwidth with the bandwidth
// in bytes/s (SI, from `peak_gbps`), so it meets a compute peak exactly at the API's ridge
// point (peak GFLOP/s ÷ peak GB/s). Record bandwidths in GiB/s are never mixed in.

import {byteRate, escapeHtml, flopRate, num} from './format.js';
import {textBox} from './chart_labels.js';
import {ceilingLabel, ceilingShortLabel} from './model.js';

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
const CEILING_DASH = ['dot', 'dash', 'dashdot', 'longdash'];
const LABEL_PX = 11; // roof, ceiling and region labels
const RIDGE_LABEL_PX = 10;

/** A memory roof's name in the legend and its hover: "HBM 2.765 TB/s". */
export function roofName(m) {
  return `${m.name} ${byteRate(m.gbps)}${m.noBytes ? ' (no byte counts)' : ''}`;
}

/**
 * Roof, ceiling, region and ridge-point traces, and `labels(frame)`: the labels written on
 * the chart (each ceiling and roof by name and value, ridge points, regions) as requests for
 * chart_labels.place, with the ridge points as obstacles.
 */
export function roofTraces(roofs, range, c, {legend = true} = {}) {
  const traces = [];
  const [x0, x1] = range.x;
  const [y0] = range.y;
  const top = roofs.ceilings.length ? roofs.ceilings[0].gflops : 0;
  const fastest = Math.max(...roofs.memories.map((m) => m.gbps), 0);
  const main = roofs.memories[0];
  const regions = main && roofs.peak > 0 && main.ridge > x0 && main.ridge < x1;

  // Shaded regions (drawn first, under everything): left / right of the main memory's ridge.
  if (regions) {
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
    );
  }

  roofs.memories.forEach((m, i) => {
    const xEnd = top > 0 ? top / m.gbps : x1;
    if (xEnd <= x0) return;
    const label = roofName(m);
    traces.push({
      type: 'scatter',
      mode: 'lines',
      name: escapeHtml(label).replace(' (no byte', '<br>(no byte'), // a narrower legend
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

  let others = 0;
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
        dash: ceiling.main ? 'solid' : CEILING_DASH[others++ % CEILING_DASH.length],
      },
      hovertemplate: `${escapeHtml(label)}<extra></extra>`,
      meta: {kind: 'ceiling', gflops: ceiling.gflops, dtypes: ceiling.dtypes},
    });
  });

  // Ridge points: where each memory roof meets the main compute peak.
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
  }
  const labels = (f) => roofLabels(roofs, range, c, f, {regions, ridges});
  return {traces, labels};
}

/** Centres along a line's visible part, preferred first, where a label of length `w` fits. */
function along(pa, pb, w, h, fractions) {
  const dx = pb[0] - pa[0];
  const dy = pb[1] - pa[1];
  const length = Math.hypot(dx, dy);
  if (length < w + 8) return [];
  const angle = (Math.atan2(-dy, dx) * 180) / Math.PI;
  const normal = [dy / length, -dx / length]; // the side above the line on screen
  const out = [];
  for (const t of fractions) {
    const at = t * length;
    if (at < w / 2 + 4 || length - at < w / 2 + 4) continue;
    const p = [pa[0] + t * dx, pa[1] + t * dy];
    for (const side of [1, -1]) {
      const off = side * (h / 2 + 2);
      out.push({c: [p[0] + normal[0] * off, p[1] + normal[1] * off], angle});
    }
  }
  return out;
}

/** The label requests of a chart's roofs, in the order they are placed (see roofTraces). */
function roofLabels(roofs, range, c, f, {regions, ridges}) {
  const labels = [];
  const [x0, x1] = range.x;
  const [y0, y1] = range.y;
  const top = roofs.ceilings.length ? roofs.ceilings[0].gflops : 0;
  const fastest = Math.max(...roofs.memories.map((m) => m.gbps), 0);
  const obstacles = ridges.map((m) => [...f.px(m.ridge, roofs.peak * G), 6]);

  // Ceilings, the main one first: on the line near the chart's right edge (the line broken
  // by the label), further left when another label is there, else above or below it.
  const ceilings = [...roofs.ceilings].sort((a, b) => Number(b.main) - Number(a.main));
  for (const ceiling of ceilings) {
    const text = ceilingShortLabel(ceiling, flopRate(ceiling.gflops));
    const shown = ceiling.main ? `<b>${escapeHtml(text)}</b>` : escapeHtml(text);
    const [w, h] = textBox(shown, LABEL_PX);
    const xStart = fastest > 0 ? Math.max(ceiling.gflops / fastest, x0) : x0;
    const left = Math.max(f.px(xStart, 1)[0], 0);
    const y = f.px(1, ceiling.gflops * G)[1];
    const xs = [];
    for (let cx = f.w - 8 - w / 2; cx - w / 2 >= left + 4; cx -= w / 3) xs.push(cx);
    // Last, left of where the line starts, at its height (it reads as the line's name).
    const before = [0, 1].map((k) => left - 10 - w / 2 - (k * w) / 3);
    const candidates = [
      ...xs.map((cx) => ({c: [cx, y], inline: true})),
      ...xs.flatMap((cx) => [{c: [cx, y - h / 2 - 1]}, {c: [cx, y + h / 2 + 1]}]),
      ...before.map((cx) => ({c: [cx, y], inline: true})),
    ];
    labels.push({
      text: shown,
      size: LABEL_PX,
      color: c.ceiling,
      background: c.plot,
      name: 'ceiling-label',
      candidates,
    });
  }

  // Memory roofs: along the line, above it first, away from the ridge.
  for (const m of roofs.memories) {
    const xEnd = Math.min(top > 0 ? top / m.gbps : x1, x1);
    const bw = m.gbps * G;
    const xa = Math.max(x0, y0 / bw);
    const xb = Math.min(xEnd, y1 / bw);
    if (!(xb > xa)) continue;
    const text = `${m.name} ${byteRate(m.gbps)}`;
    const [w, h] = textBox(text, LABEL_PX);
    const candidates = along(
      f.px(xa, xa * bw),
      f.px(xb, xb * bw),
      w,
      h,
      [0.3, 0.45, 0.18, 0.6, 0.72, 0.85, 0.1],
    );
    labels.push({
      text: escapeHtml(text),
      size: LABEL_PX,
      color: c.roof,
      name: 'roof-label',
      optional: true,
      candidates,
    });
  }

  // Ridge points: above the peak, where no op can be (unless above its roof), stacked.
  for (const m of ridges) {
    const text = `${m.name} ridge ${num(m.ridge)}`;
    const [w] = textBox(text, RIDGE_LABEL_PX);
    const p = f.px(m.ridge, roofs.peak * G);
    const candidates = [];
    for (const dy of [20, 34, 48, 62, 76]) {
      for (const dx of [0, -(w / 2 + 4), w / 2 + 4]) {
        candidates.push({c: [p[0] + dx, p[1] - dy], arrow: p});
      }
    }
    labels.push({
      text: escapeHtml(text),
      size: RIDGE_LABEL_PX,
      color: c.muted,
      name: 'ridge-label',
      optional: true,
      candidates,
    });
  }

  // Regions: along the bottom, centred in their region, else against the ridge or the edge,
  // shortened or left out when there is no room.
  if (regions) {
    const main = roofs.memories[0];
    const ridgeX = f.px(main.ridge, 1)[0];
    const region = (texts, from, to, name) => {
      const candidates = [];
      for (const text of texts) {
        const [w, h] = textBox(text, LABEL_PX);
        const cy = f.h - h / 2 - 4;
        for (const cx of [(from + to) / 2, to - 6 - w / 2, from + 6 + w / 2]) {
          candidates.push({c: [cx, cy], text: escapeHtml(text)});
        }
      }
      labels.push({text: '', size: LABEL_PX, color: c.muted, name, optional: true, candidates});
    };
    region([`memory-bound (${main.name})`, 'memory-bound'], 0, ridgeX, 'region-label');
    region(['compute-bound'], ridgeX, f.w, 'region-label');
  }
  return {labels, obstacles};
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
