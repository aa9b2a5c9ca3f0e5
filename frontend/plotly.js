// Loads the Plotly bundle the plugin serves (static/plotly.min.js, a UMD script that sets
// window.Plotly) once, with a <script src> element: allowed by TensorBoard's CSP
// (script-src 'self'), unlike an inline script or a CDN.

import {markOnce} from './timing.js';

let url = './static/plotly.min.js';
let loading = null;

/** The URL to load the bundle from (index.js's versioned one); call before loadPlotly(). */
export function usePlotlyUrl(versioned) {
  url = versioned;
}

export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (loading) return loading;
  loading = new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = url;
    script.async = true;
    script.addEventListener('load', () => {
      markOnce('plotlyLoadedMs');
      if (window.Plotly) resolve(window.Plotly);
      else reject(new Error('plotly.min.js did not define Plotly'));
    });
    script.addEventListener('error', () => {
      loading = null;
      reject(new Error('the chart library (static/plotly.min.js) could not be loaded'));
    });
    document.head.append(script);
  });
  return loading;
}
