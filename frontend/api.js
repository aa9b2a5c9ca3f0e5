// Talks to the plugin's HTTP API with relative URLs only (so --path_prefix works).

export class ApiError extends Error {}

async function getJson(route, params = {}) {
  const query = new URLSearchParams(params).toString();
  const response = await fetch(query ? `./${route}?${query}` : `./${route}`);
  let body = null;
  try {
    body = await response.json();
  } catch (err) {
    throw new ApiError(`${route}: the server sent no JSON (HTTP ${response.status})`);
  }
  if (!response.ok) {
    throw new ApiError(body && body.error ? body.error : `${route}: HTTP ${response.status}`);
  }
  return body;
}

export const api = {
  runs: () => getJson('runs'),
  hosts: (run) => getJson('hosts', {run}),
  steps: (run, host) => getJson('steps', {run, host}),
  roofline: (run, host) => getJson('data', {run, host, tag: 'roofline_model', format: 'json'}),
  csvUrl: (run, host) =>
    `./data_csv?${new URLSearchParams({run, host, tag: 'roofline_model'})}`,
};
