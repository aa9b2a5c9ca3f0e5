// The roofline tab: a Profile-style page with Run / Host / Tool / Step selectors.
// TensorBoard loads this module in an iframe and calls render().

import {api} from './api.js';
import {deviceSummary, el, recordTable, select} from './views.js';

const TOOLS = [
  ['model', 'Roofline Model'],
  ['compare', 'Roofline Compare'],
];

const state = {runs: [], hosts: [], steps: [], run: '', host: '', tool: 'model', step: 'total'};
let root;
let main;
let sidebar;

function stylesheet() {
  return el('link', {rel: 'stylesheet', href: './static/style.css'});
}

function setStatus(kind, text) {
  main.replaceChildren(el('p', {class: `status ${kind}`, role: 'status', text}));
}

function recordsFor(database, step) {
  const all = (database.roofline_model_record || []).filter((r) => r.include_infeed_outfeed);
  if (step === 'total') return all.filter((r) => (r.record_type || 'ALL') === 'ALL');
  if (step === 'average') return all.filter((r) => r.record_type === 'AVERAGE_STEP');
  return all.filter((r) => r.record_type === 'PER_STEP' && String(r.step_num || 0) === step);
}

function renderSidebar() {
  const stepOptions = [['total', 'Total'], ['average', 'Average']].concat(
    state.steps.map((s) => [String(s.step_num), `Step ${s.step_num}${s.complete ? '' : ' (incomplete)'}`]),
  );
  sidebar.replaceChildren(
    el('h1', {text: 'Roofline'}),
    select('Run', 'run-select', state.runs, state.run, (v) => chooseRun(v)),
    select('Host', 'host-select', state.hosts, state.host, (v) => chooseHost(v)),
    select('Tool', 'tool-select', TOOLS, state.tool, (v) => {
      state.tool = v;
      show();
    }),
    select('Step', 'step-select', stepOptions, state.step, (v) => {
      state.step = v;
      show();
    }),
  );
}

async function show() {
  renderSidebar();
  if (!state.run) {
    setStatus('empty', 'No profile runs found. Record a profile (jax.profiler.trace, ' +
      'tf.profiler) into this logdir: <logdir>/**/plugins/profile/<run>/<host>.xplane.pb');
    return;
  }
  if (state.tool === 'compare') {
    setStatus('empty', 'Roofline Compare: choose two steps or runs (coming with the frontend).');
    return;
  }
  setStatus('loading', `Loading the roofline of ${state.run} / ${state.host}…`);
  try {
    const data = await api.roofline(state.run, state.host);
    const database = data.database || {};
    const records = recordsFor(database, state.step);
    const download = el('a', {href: api.csvUrl(state.run, state.host), download: '', text: 'Download CSV'});
    main.replaceChildren(
      deviceSummary(data.device, database.diagnostics || {}),
      el('div', {class: 'toolbar'}, download),
      recordTable(records),
    );
  } catch (err) {
    setStatus('error', `Could not load this profile: ${err.message}`);
  }
}

async function chooseHost(host) {
  state.host = host;
  state.step = 'total';
  state.steps = [];
  try {
    state.steps = (await api.steps(state.run, host)).steps;
  } catch (err) {
    // The data view shows the error.
  }
  await show();
}

async function chooseRun(run) {
  state.run = run;
  state.hosts = [];
  try {
    state.hosts = await api.hosts(run);
  } catch (err) {
    setStatus('error', `Could not list the hosts of ${run}: ${err.message}`);
    return;
  }
  await chooseHost(state.hosts[0] || '');
}

export async function render() {
  sidebar = el('nav', {class: 'sidebar', 'aria-label': 'Selection'});
  main = el('main', {class: 'main'});
  root = el('div', {class: 'roofline-app'}, sidebar, main);
  document.head.append(stylesheet());
  document.body.replaceChildren(root);
  setStatus('loading', 'Looking for profile runs…');
  try {
    state.runs = await api.runs();
  } catch (err) {
    setStatus('error', `Could not list the runs: ${err.message}`);
    return;
  }
  if (state.runs.length) await chooseRun(state.runs[0]);
  else await show();
}
