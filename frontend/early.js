// The requests the tab's first view waits for, started by index.js as soon as this module
// and api.js are here, instead of after every module of the tab has arrived and run: the
// runs, then the remembered (else the first) run's hosts, then that host's steps and its
// whole-profile roofline. The app makes the same choices (app.js) and gets these answers
// (api.js keeps them for it); a request the app would not make is never sent.

import {api} from './api.js';
import {restore} from './state.js';

/** Starts the chain; resolves when its last request is sent (errors are the app's to say). */
export async function startEarly() {
  const saved = restore();
  const runs = await api.primeRuns();
  if (!Array.isArray(runs) || !runs.length) return;
  const run = runs.includes(saved.run) ? saved.run : runs[0];
  const hosts = await api.primeHosts(run);
  if (!Array.isArray(hosts) || !hosts.length) return;
  const host = hosts.includes(saved.host) ? saved.host : hosts[0];
  api.steps(run, host).catch(() => {});
  // Other peaks are checked by the app first (a choice no longer offered falls back): only
  // the profile's own peaks are asked for ahead (the app asks for the Total of all devices
  // whatever the device chosen).
  if (!saved.peaks) api.roofline(run, host, 'total').catch(() => {});
}
