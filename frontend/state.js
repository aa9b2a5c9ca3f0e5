// The tab's selection (run, host, tool, step, include flag, compare sides, filters), with
// the last selection remembered in localStorage so a reload shows the same view.

const STORAGE_KEY = 'tb-roofline.selection';

export const DEFAULT_FILTERS = Object.freeze({
  category: '',
  boundBy: '',
  regex: '',
  program: '',
  minShare: 0, // percent of the selection's time
  topN: 0, // 0: all
});

export const state = {
  runs: [],
  hosts: [],
  steps: {has_step_markers: false, steps: []},
  devices: [], // the host's devices that ran ops (the steps route's `devices`)
  stepsLoading: false, // the steps of the chosen host are on their way (the profile converts)
  logdirNotes: [], // what the logdir holds but is not read (the `logdir_notes` route)
  run: '',
  host: '',
  tool: 'model', // 'model' | 'compare' | 'layers'
  step: 'total', // 'total' | 'average' | step number as a string
  device: 'all', // 'all' | a device number as a string: the API's `device`
  include: true, // include infeed/outfeed ops
  peaks: '', // '' (the profile's own), 'calibrated' or a built-in device key: the API's `peaks`
  compare: {a: {run: '', host: '', step: 'total'}, b: {run: '', host: '', step: 'total'}},
  filters: {...DEFAULT_FILTERS},
};

/** The remembered selection, or {} (storage may be disabled). */
export function restore() {
  try {
    const saved = JSON.parse(window.localStorage.getItem(STORAGE_KEY) || '{}');
    return saved && typeof saved === 'object' ? saved : {};
  } catch {
    return {};
  }
}

export function remember() {
  const {run, host, tool, step, include, compare, peaks, device} = state;
  try {
    window.localStorage.setItem(
      STORAGE_KEY,
      JSON.stringify({run, host, tool, step, include, compare, peaks, device}),
    );
  } catch {
    // Storage is optional.
  }
}

/**
 * The steps the tab offers, by step number: every step, or none when no step holds an op
 * (every op ran outside the steps: only Total shows them).
 */
export function listedSteps(steps) {
  const list = (steps && steps.steps) || [];
  if (stepsWithoutOps(steps)) return [];
  // Sorted once per answer: the sidebar asks on every change (tens of thousands of steps).
  let sorted = listed.get(list);
  if (!sorted) {
    sorted = [...list].sort((a, b) => a.step_num - b.step_num);
    listed.set(list, sorted);
  }
  return sorted;
}

const listed = new WeakMap(); // a steps answer's list -> its steps by number (do not change)

/** True when the profile has steps but none of them holds an op (the `holds_ops` flags). */
export function stepsWithoutOps(steps) {
  const list = (steps && steps.steps) || [];
  return list.length > 0 && list.every((s) => s.holds_ops === false);
}

/** Every step choice: Total, Average (when there are complete steps), each listed step. */
export function stepOptions(steps) {
  const list = listedSteps(steps);
  const options = [['total', 'Total (whole profile)']];
  if (list.some((s) => s.complete)) options.push(['average', 'Average step']);
  for (const s of list) options.push([String(s.step_num), stepText(s)]);
  return options;
}

/** "Step 3", "Step 0 (incomplete)". */
export function stepText(s) {
  return `Step ${s.step_num}${s.complete ? '' : ' (incomplete)'}`;
}

/** A label for a selection: "run · host · step 3" (with a device: "· device 2"). */
export function selectionLabel(run, host, step, device = 'all') {
  const stepText =
    step === 'total' ? 'total' : step === 'average' ? 'average step' : `step ${step}`;
  const deviceText = device && device !== 'all' ? ` · device ${device}` : '';
  return `${run} · ${host} · ${stepText}${deviceText}`;
}
