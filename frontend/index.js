// The roofline tab. TensorBoard loads this module in an iframe (whose <base> is
// plugin/roofline/) and calls render(). Modules: app (controller), sidebar, model_view and
// compare (the two tools), charts/roofs (Plotly figures), table, filters, columns, device,
// export, model/guidance (data shaping), api, state, theme, timing, format, dom, plotly.

import {loadPlotly} from './plotly.js';
import {startTheme} from './theme.js';
import {exposeTimings} from './timing.js';

export async function render() {
  exposeTimings();
  // The 4.8 MB chart library loads while the rest of the modules and the data do.
  loadPlotly().catch(() => {}); // a failure is shown by the view that needs a chart
  const style = document.createElement('link');
  style.rel = 'stylesheet';
  style.href = './static/style.css';
  document.head.append(style);
  document.documentElement.lang = 'en';
  document.title = 'Roofline';
  startTheme();
  const root = document.createElement('div');
  root.className = 'roofline-app';
  document.body.replaceChildren(root);
  const {App} = await import('./app.js');
  await new App(root).start();
}
