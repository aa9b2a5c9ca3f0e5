// Paint timings, exposed on window.__roofline for tests and curious users:
// `<chart>FirstPaintMs` is performance.now() (ms since this iframe's navigation) at the
// chart's first paint: for the op chart, its first view (static_chart.js, drawn before Plotly
// is ready) once the browser has painted it, and Plotly's own first `plotly_afterplot` as
// `opChartPlotlyFirstPaintMs`; `<chart>FirstPaintFromTopMs` is the same moment measured from
// the navigation of the TensorBoard page that holds the iframe; `<chart>LastPaintMs` the
// latest one (a step switch is timed to it). Other marks (`markOnce`): renderStartMs (our
// first module runs), dataLoadedMs, panelShownMs, plotlyLoadedMs (the library has run).

const timings = {paints: {}};

/** Puts the timings on window.__roofline (called once by render(), not at import). */
export function exposeTimings() {
  window.__roofline = timings;
}

function topOrigin() {
  try {
    return window.parent && window.parent !== window
      ? window.parent.performance.timeOrigin
      : performance.timeOrigin;
  } catch {
    return performance.timeOrigin;
  }
}

export function markPaint(chart) {
  const now = performance.now();
  timings.paints[chart] = (timings.paints[chart] || 0) + 1;
  timings[`${chart}LastPaintMs`] = now;
  if (timings[`${chart}FirstPaintMs`] === undefined) {
    timings[`${chart}FirstPaintMs`] = now;
    timings[`${chart}FirstPaintFromTopMs`] = performance.timeOrigin + now - topOrigin();
  }
}

/** Records performance.now() the first time `name` happens (e.g. plotlyLoadedMs). */
export function markOnce(name) {
  markAt(name, performance.now());
}

/** Records `ms` (a performance.now() taken earlier) as `name`, the first time. */
export function markAt(name, ms) {
  if (timings[name] === undefined) timings[name] = ms;
}
