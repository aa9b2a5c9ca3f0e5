// The roofline tab. TensorBoard loads this module in an iframe (whose <base> is
// plugin/roofline/) and calls render(). Modules: app (controller), sidebar, model_view and
// compare (the two tools), layers_view (the layer tree), charts/roofs (Plotly figures),
// chart_labels (labels on a chart, placed apart), table, pager, step_picker, filters, columns,
// device, device_picker, export, advice and hardware (panels of the model view),
// model/guidance (data shaping), op_detail (what an op is known by), progress (loading
// status), api, early (the first view's requests, sent first), prefetch (the neighbouring
// steps), state, theme, timing, format, dom, plotly, static_chart (a chart's first view,
// drawn before Plotly is ready).
//
// No static imports: the 4.8 MB chart library starts downloading (a preload) before any other
// module is fetched, and the first view's requests go out as soon as api.js is here. The
// plugin names the plotly version in this module's URL (index.js?plotly=7.1.0), so the
// library's URL is versioned and the browser keeps it, and its compiled code, for a year.
// The library is only downloaded here: it runs (over a second of main thread the first time)
// once the op chart's first view is on the screen (model_view.js), or when a view needs it;
// at once when it came from the browser's cache.

// Every module app.js needs, directly or not, fetched at once (modulepreload) instead of one
// level of imports after another (tests/test_frontend_scale.py checks the list is complete).
export const MODULES = [
  'advice.js',
  'api.js',
  'app.js',
  'chart_labels.js',
  'charts.js',
  'columns.js',
  'compare.js',
  'device.js',
  'device_picker.js',
  'dom.js',
  'early.js',
  'export.js',
  'filters.js',
  'format.js',
  'guidance.js',
  'hardware.js',
  'layers_view.js',
  'model.js',
  'model_view.js',
  'op_detail.js',
  'pager.js',
  'peaks.js',
  'plotly.js',
  'prefetch.js',
  'progress.js',
  'roofs.js',
  'sidebar.js',
  'state.js',
  'static_chart.js',
  'step_picker.js',
  'table.js',
  'theme.js',
  'timing.js',
];

const PLOTLY_VERSION = new URL(import.meta.url).searchParams.get('plotly');
// The frontend's version (the plugin names it too): our files under it are kept a year, and
// the server writes it into each module's imports of the others (static_files.py).
const OWN_VERSION = new URL(import.meta.url).searchParams.get('v');
const VERSIONED = OWN_VERSION ? `?v=${encodeURIComponent(OWN_VERSION)}` : '';
const PLOTLY_URL = PLOTLY_VERSION
  ? `./static/plotly.min.js?v=${encodeURIComponent(PLOTLY_VERSION)}`
  : './static/plotly.min.js';

// The modules of the first requests (early.js), asked for before the others.
const FIRST = ['early.js', 'api.js', 'state.js'];

export async function render() {
  const startMs = performance.now();
  const early = import('./early.js').then(({startEarly}) => startEarly());
  early.catch(() => {}); // the app asks again and says what failed
  const preload = document.createElement('link');
  preload.rel = 'preload';
  preload.as = 'script';
  preload.href = PLOTLY_URL;
  const preloaded = new Promise((resolve) => preload.addEventListener('load', resolve));
  document.head.append(preload);
  for (const name of [...FIRST, ...MODULES.filter((n) => !FIRST.includes(n))]) {
    const link = document.createElement('link');
    link.rel = 'modulepreload';
    link.href = `./static/${name}${VERSIONED}`;
    document.head.append(link);
  }
  const style = document.createElement('link');
  style.rel = 'stylesheet';
  style.href = `./static/style.css${VERSIONED}`;
  document.head.append(style);
  document.documentElement.lang = 'en';
  document.title = 'Roofline';
  const [{loadPlotly, usePlotlyUrl}, {startTheme}, {exposeTimings, markAt}] = await Promise.all([
    import('./plotly.js'),
    import('./theme.js'),
    import('./timing.js'),
  ]);
  exposeTimings();
  markAt('renderStartMs', startMs);
  usePlotlyUrl(PLOTLY_URL);
  // From the browser's cache (its compiled code with it, a fifth of a first run), the chart
  // library runs at once, while the modules and the data are on their way; downloaded, it
  // waits for the op chart's first view (model_view.js).
  preloaded.then(() => {
    const [entry] = performance.getEntriesByName(preload.href);
    if (entry && entry.transferSize === 0 && entry.decodedBodySize > 0)
      loadPlotly().catch(() => {}); // a failure is shown by the view that needs a chart
  });
  startTheme();
  const root = document.createElement('div');
  root.className = 'roofline-app';
  document.body.replaceChildren(root);
  const {App} = await import('./app.js');
  await new App(root).start();
}
