// The roofline tab. TensorBoard loads this module in an iframe (whose <base> is
// plugin/roofline/) and calls render(). Modules: app (controller), sidebar, model_view and
// compare (the two tools), layers_view (the layer tree), charts/roofs (Plotly figures),
// chart_labels (labels on a chart, placed apart), table, pager, step_picker, filters, columns,
// device, device_picker, export, advice and hardware (panels of the model view),
// model/guidance (data shaping), op_detail (what an op is known by), progress (loading
// status), api, prefetch (the neighbouring steps), state, theme, timing, format, dom, plotly.
//
// No static imports: the 4.8 MB chart library starts downloading (a preload) before any other
// module is fetched. The plugin names the plotly version in this module's URL
// (index.js?plotly=7.1.0), so the library's URL is versioned and the browser keeps it, and its
// compiled code, for a year.

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
  'step_picker.js',
  'table.js',
  'theme.js',
  'timing.js',
];

const PLOTLY_VERSION = new URL(import.meta.url).searchParams.get('plotly');
const PLOTLY_URL = PLOTLY_VERSION
  ? `./static/plotly.min.js?v=${encodeURIComponent(PLOTLY_VERSION)}`
  : './static/plotly.min.js';

export async function render() {
  const preload = document.createElement('link');
  preload.rel = 'preload';
  preload.as = 'script';
  preload.href = PLOTLY_URL;
  document.head.append(preload);
  for (const name of MODULES) {
    const link = document.createElement('link');
    link.rel = 'modulepreload';
    link.href = `./static/${name}`;
    document.head.append(link);
  }
  const style = document.createElement('link');
  style.rel = 'stylesheet';
  style.href = './static/style.css';
  document.head.append(style);
  document.documentElement.lang = 'en';
  document.title = 'Roofline';
  const [{loadPlotly, usePlotlyUrl}, {startTheme}, {exposeTimings}] = await Promise.all([
    import('./plotly.js'),
    import('./theme.js'),
    import('./timing.js'),
  ]);
  exposeTimings();
  usePlotlyUrl(PLOTLY_URL);
  // The chart library loads while the rest of the modules and the data do; the views draw
  // everything else as soon as their data is there and the charts when Plotly is ready.
  loadPlotly().catch(() => {}); // a failure is shown by the view that needs a chart
  startTheme();
  const root = document.createElement('div');
  root.className = 'roofline-app';
  document.body.replaceChildren(root);
  const {App} = await import('./app.js');
  await new App(root).start();
}
