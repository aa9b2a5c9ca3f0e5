// The roofline tab. TensorBoard loads this module in an iframe (whose <base> is
// plugin/roofline/) and calls render(). Modules: app (controller), sidebar, model_view and
// compare (the two tools), charts/roofs (Plotly figures), table, filters, columns, device,
// export, model/guidance (data shaping), api, state, theme, timing, format, dom, plotly.

import {App} from './app.js';
import {el} from './dom.js';
import {startTheme} from './theme.js';

export async function render() {
  document.head.append(el('link', {rel: 'stylesheet', href: './static/style.css'}));
  document.documentElement.lang = 'en';
  document.title = 'Roofline';
  startTheme();
  const root = el('div', {class: 'roofline-app'});
  document.body.replaceChildren(root);
  await new App(root).start();
}
