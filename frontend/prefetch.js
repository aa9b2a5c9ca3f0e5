// Fetches the steps next to the one shown (the picker's ◀ and ▶ steps) once the view is
// drawn, so that choosing one draws it without waiting for the server: the answers land in
// the api's cache (the server renders each step once, from the converted profile it keeps).

import {api} from './api.js';
import {listedSteps} from './state.js';

export const PREFETCH_AROUND = 1; // steps fetched on each side of the shown one

const ordered = new WeakMap(); // a steps answer -> its step numbers in the picker's order

/** The step numbers (strings) within `around` of `step` in the picker's order. */
export function neighbourSteps(steps, step, around = PREFETCH_AROUND) {
  if (!steps) return [];
  let numbers = ordered.get(steps);
  if (!numbers) {
    numbers = listedSteps(steps).map((s) => String(s.step_num));
    ordered.set(steps, numbers);
  }
  const at = numbers.indexOf(String(step));
  if (at < 0) return [];
  const near = [];
  for (let k = 1; k <= around; k++) near.push(numbers[at + k], numbers[at - k]);
  return near.filter((n) => n !== undefined);
}

/**
 * Asks for the neighbours of `sel.step` (a step number: Total and Average have none) in the
 * background; `steps`: the profile's steps answer. Failures are the step's own business
 * when it is chosen.
 */
export function prefetchNeighbours(sel, steps) {
  if (sel.step === 'total' || sel.step === 'average') return;
  const start = () => {
    for (const step of neighbourSteps(steps, sel.step))
      api.roofline(sel.run, sel.host, step, sel.peaks, sel.device).catch(() => {});
  };
  // After the browser has painted the view: the chart the user chose comes first.
  setTimeout(start, 0);
}
