// The loading status of a selection: what the server is doing (the `progress` route: reading,
// analysing, rendering, ...) and the time so far, so a big profile's first load says it is
// working instead of spinning silently.

import {api} from './api.js';
import {status} from './dom.js';
import {counted} from './format.js';

export const PROGRESS_POLL_MS = 1000; // the server is asked this often (none for fast loads)
const TICK_MS = 250; // the elapsed time is redrawn this often

const STAGE_WORDS = {
  reading: 'reading the profile',
  analysing: 'analysing its ops and steps',
  converting: 'reading and analysing (in worker processes)',
  combining: 'combining the hosts',
  rendering: 'rendering the roofline',
};

/** Seconds as the status says them: "0.4 s", "12 s", "2 min 05 s". */
export function elapsedText(seconds) {
  const s = Math.max(0, seconds);
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.floor(s)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
}

/** The stage line of a `progress` answer: "analysing its ops and steps (2 of 8 hosts)". */
export function stageText(progress) {
  if (!progress || !progress.busy) return '';
  const words = STAGE_WORDS[progress.stage] || progress.stage;
  const hosts = progress.hosts || 0;
  const perHost = ['reading', 'analysing', 'converting'].includes(progress.stage);
  if (hosts <= 1 || !perHost) return words;
  const busy = Object.values(progress.stages || {}).reduce((sum, n) => sum + n, 0);
  return `${words} (${busy} of ${counted(hosts, 'host')} at work)`;
}

/**
 * A loading status for `run`/`host` whose text says `title`, the stage and the time so far;
 * `stop()` ends its timers (call it when the answer is in). The node is `status('loading')`
 * with a `.progress-line` (role status, polite) that the timers rewrite.
 */
export function loadingProgress(title, run, host) {
  const node = status('loading', title);
  node.classList.add('with-progress');
  const line = document.createElement('p');
  line.className = 'status-detail progress-line';
  line.dataset.progress = 'elapsed';
  node.append(line);
  const started = performance.now();
  let stage = '';
  let stopped = false;
  const draw = () => {
    const elapsed = elapsedText((performance.now() - started) / 1000);
    line.textContent = stage ? `${elapsed} · ${stage}…` : `${elapsed} so far`;
  };
  draw();
  const tick = setInterval(draw, TICK_MS);
  let poll = null;
  const ask = async () => {
    try {
      const answer = await api.progress(run, host);
      if (stopped) return;
      stage = stageText(answer);
      node.dataset.stage = (answer && answer.stage) || '';
      draw();
    } catch {
      // The status still counts the time; the request's own error is shown by the view.
    }
    if (!stopped) poll = setTimeout(ask, PROGRESS_POLL_MS);
  };
  if (run && host) poll = setTimeout(ask, PROGRESS_POLL_MS);
  return {
    node,
    stop() {
      stopped = true;
      clearInterval(tick);
      clearTimeout(poll);
    },
  };
}
