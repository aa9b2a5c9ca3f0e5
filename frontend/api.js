// Talks to the plugin's HTTP API (http_api.md) with relative URLs only, so TensorBoard's
// --path_prefix works. Errors carry the server's own one-line message.

export class ApiError extends Error {}

const CACHE_SIZE = 24;
const cache = new Map(); // url -> Promise of the parsed body (successful ones only)
// Answers of uncached routes asked for before the tab's modules arrived (early.js): url ->
// Promise, each handed out once, to the first call that asks for the same URL.
const primed = new Map();

function url(route, params) {
  const query = new URLSearchParams(params).toString();
  return query ? `./${route}?${query}` : `./${route}`;
}

async function fetchJson(target, route, init = {}) {
  let response;
  try {
    response = await fetch(target, {credentials: 'same-origin', ...init});
  } catch {
    throw new ApiError(`The TensorBoard server did not answer (${route}). Is it still running?`);
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(
      `The server sent an unreadable answer to ${route} (HTTP ${response.status}).`,
    );
  }
  if (!response.ok) {
    throw new ApiError(body && body.error ? body.error : `${route}: HTTP ${response.status}`);
  }
  return body;
}

/** GET a JSON route; successful answers of cacheable routes are kept (LRU). */
function getJson(route, params = {}, {cached = false} = {}) {
  const target = url(route, params);
  if (!cached) {
    const early = primed.get(target);
    primed.delete(target);
    return early || fetchJson(target, route);
  }
  if (cache.has(target)) {
    const hit = cache.get(target);
    cache.delete(target);
    cache.set(target, hit);
    return hit;
  }
  const pending = fetchJson(target, route);
  cache.set(target, pending);
  pending.catch(() => cache.delete(target));
  while (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value);
  return pending;
}

/** The `peaks` parameter, only when one is chosen (the default keeps the old URLs). */
const withPeaks = (params, peaks) => (peaks ? {...params, peaks} : params);
/** The `device` parameter, only for one device (all devices keep the old URLs). */
const withDevice = (params, device) => (device && device !== 'all' ? {...params, device} : params);

/** Asks for an uncached route now; the next call for the same URL gets this answer. */
function prime(route, params = {}) {
  const target = url(route, params);
  const pending = fetchJson(target, route);
  pending.catch(() => {}); // the call that takes it sees the failure
  primed.set(target, pending);
  return pending;
}

export const api = {
  runs: () => getJson('runs'),
  /** `runs` and `hosts` asked for ahead of the page's own call (early.js), kept for it. */
  primeRuns: () => prime('runs'),
  primeHosts: (run) => prime('hosts', {run}),
  /** What the logdir holds but is not read (stray *.xplane.pb files, misnamed traces). */
  logdirNotes: () => getJson('logdir_notes'),
  /** What the conversion of a selection is doing now (stage, time so far); never cached. */
  progress: (run, host) => getJson('progress', {run, host}),
  hosts: (run) => getJson('hosts', {run}),
  steps: (run, host, device = 'all') =>
    getJson('steps', withDevice({run, host}, device), {cached: true}),
  /**
   * Our json form of one selection; step is 'total', 'average' or a step number; peaks: '' or
   * a `peaks` value; device: 'all' or a device number. A step's answer comes without the list
   * of steps (`step_list=0`): the whole profile's answer has it, and it can be megabytes.
   */
  roofline: (run, host, step = 'total', peaks = '', device = 'all') =>
    getJson(
      'data',
      withDevice(
        withPeaks(
          {
            run,
            host,
            tag: 'roofline_model',
            format: 'json',
            step,
            ...(step === 'total' ? {} : {step_list: 0}),
          },
          peaks,
        ),
        device,
      ),
      {cached: true},
    ),
  compare: (a, b, peaks = '') =>
    getJson(
      'compare',
      withPeaks(
        {
          a_run: a.run,
          a_host: a.host,
          a_step: a.step,
          b_run: b.run,
          b_host: b.host,
          b_step: b.step,
        },
        peaks,
      ),
      {cached: true},
    ),
  /** The peaks the tab can offer: built-in devices, this machine's calibration. */
  peaks: () => getJson('peaks'),
  /** The calibration's status (polled while it runs). */
  calibration: () => getJson('calibrate'),
  /** Starts measuring this machine on the server. */
  calibrate: () =>
    fetchJson(url('calibrate'), 'calibrate', {
      method: 'POST',
      headers: {'X-Roofline-Calibrate': '1'},
    }),
  /** Forgets cached answers (a new calibration changes what `peaks=calibrated` means). */
  forget: () => cache.clear(),
  /** XProf's CSV of the whole table (every record set), straight from the server. */
  csvUrl: (run, host) => url('data_csv', {run, host, tag: 'roofline_model'}),
};
