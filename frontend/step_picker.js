// The Step picker, usable with thousands of steps: a select with Total, Average and one page
// of steps (the page of the chosen one), a box to type a step number, previous / next step,
// and jumps to the slowest and fastest step by device time (the steps route's device_time_us:
// the figure the program table shows for that step, summed over the cores; wall time beside
// it). Every control is a native select, input or button with a label, so the keyboard
// reaches all of them.

import {el} from './dom.js';
import {duration, num} from './format.js';
import {listedSteps, stepText} from './state.js';

export const STEP_PAGE = 50; // steps listed in the select at a time

/** A step's device time (µs): its Program time, as the program table shows it. */
export function stepTime(s) {
  return Number(s.device_time_us ?? s.duration_us) || 0;
}

/**
 * The slowest and fastest step by device time (`stepTime`): among the complete steps when
 * there are some (a cut step's time is partial), else among all; a tie goes to the lower
 * step number. `list`: steps sorted by step number.
 */
export function extremeSteps(list) {
  const pool = list.some((s) => s.complete) ? list.filter((s) => s.complete) : list;
  let slowest = null;
  let fastest = null;
  for (const s of pool) {
    const d = stepTime(s);
    if (!slowest || d > stepTime(slowest)) slowest = s;
    if (!fastest || d < stepTime(fastest)) fastest = s;
  }
  return {slowest, fastest};
}

/** "step 2: 11.29 ms of device time summed over 8 TensorCores (wall time 1.421 ms)". */
export function stepTimeText(s, meaning = 'device time') {
  const wall = s.device_time_us !== undefined ? ` (wall time ${duration(s.duration_us || 0)})` : '';
  return `step ${s.step_num}: ${duration(stepTime(s))} of ${meaning}${wall}`;
}

/** The page of `STEP_PAGE` steps holding position `index` (-1: the first page). */
export function stepPage(list, index) {
  if (list.length <= STEP_PAGE) return {start: 0, steps: list};
  const start = Math.floor(Math.max(index, 0) / STEP_PAGE) * STEP_PAGE;
  return {start, steps: list.slice(start, start + STEP_PAGE)};
}

// Per list of steps (`listedSteps` keeps one per answer): made once, not on every redraw.
const numbered = new WeakMap();
const extremes = new WeakMap();

function stepsByNumber(list) {
  if (!numbered.has(list)) numbered.set(list, new Map(list.map((s) => [String(s.step_num), s])));
  return numbered.get(list);
}

function extremesOf(list) {
  if (!extremes.has(list)) extremes.set(list, extremeSteps(list));
  return extremes.get(list);
}

function rangeText(list) {
  return `${num(list[0].step_num)}–${num(list[list.length - 1].step_num)}`;
}

/**
 * The picker. id: the select's id (its other controls are `${id}-input`, `-prev`, `-next`,
 * `-slowest`, `-fastest`, `-message`); steps: the steps route's answer; value: 'total',
 * 'average' or a step number as a string; onChange(value).
 */
export function stepPicker({id, label = 'Step', steps, value, onChange, loading = false}) {
  const list = listedSteps(steps);
  const index = list.findIndex((s) => String(s.step_num) === String(value));
  const select = el('select', {id, disabled: loading, 'aria-busy': loading ? 'true' : null});
  const option = (optionValue, text) =>
    el('option', {value: optionValue, text, selected: String(optionValue) === String(value)});
  select.append(option('total', 'Total (whole profile)'));
  if (list.some((s) => s.complete)) select.append(option('average', 'Average step'));
  const page = stepPage(list, index);
  const items = page.steps.map((s) => option(String(s.step_num), stepText(s)));
  if (list.length > STEP_PAGE) {
    select.append(
      el('optgroup', {label: `Steps ${rangeText(page.steps)} of ${num(list.length)}`}, items),
    );
  } else {
    select.append(...items);
  }
  select.addEventListener('change', () => onChange(select.value));
  const labelId = `${id}-label`;
  const parts = [el('label', {class: 'field-label', id: labelId, for: id, text: label}), select];
  if (loading)
    parts.push(
      el('p', {
        class: 'hint',
        id: `${id}-loading`,
        'data-note': 'steps-loading',
        text: 'The steps come with the profile: loading…',
      }),
    );
  const meaning = (steps && steps.time_meaning) || 'device time';
  if (list.length >= 2) parts.push(...stepControls(id, list, index, onChange, meaning));
  return el('div', {class: 'field step-picker', role: 'group', 'aria-labelledby': labelId}, parts);
}

function stepControls(id, list, index, onChange, meaning) {
  const go = (s) => onChange(String(s.step_num));
  const message = el('p', {
    class: 'hint step-message',
    id: `${id}-message`,
    role: 'status',
    text: `${num(list.length)} steps, ${rangeText(list)}: type a number to go to it.`,
  });
  const input = el('input', {
    id: `${id}-input`,
    type: 'number',
    inputmode: 'numeric',
    step: 1,
    min: list[0].step_num,
    max: list[list.length - 1].step_num,
    placeholder: 'step #',
    'aria-describedby': message.id,
  });
  if (index >= 0) input.value = String(list[index].step_num);
  const byNumber = stepsByNumber(list);
  let gone = false; // Enter went to a step: the box's change event (as it goes) goes nowhere
  const submit = () => {
    const text = input.value.trim();
    if (!text || gone) return;
    const found = byNumber.get(String(Number(text)));
    if (found) {
      input.removeAttribute('aria-invalid');
      if (list.indexOf(found) !== index) {
        gone = true;
        go(found);
      }
      return;
    }
    input.setAttribute('aria-invalid', 'true');
    message.textContent = `No step ${text}: the steps are ${rangeText(list)} (${num(list.length)}).`;
  };
  input.addEventListener('change', submit);
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      submit();
    }
  });
  const previous = index > 0 ? list[index - 1] : null;
  const next = index < 0 ? list[0] : list[index + 1] || null;
  const button = (suffix, text, title, target) =>
    el('button', {
      type: 'button',
      class: 'small',
      id: `${id}-${suffix}`,
      text,
      title,
      'aria-label': title,
      disabled: !target,
      onclick: () => target && go(target),
    });
  const {slowest, fastest} = extremesOf(list);
  const which = list.some((s) => s.complete) ? 'complete step' : 'step';
  const jump = (suffix, word, s) =>
    button(suffix, `${word} #${s.step_num}`, `${word} ${which}, ${stepTimeText(s, meaning)}`, s);
  return [
    el(
      'div',
      {class: 'step-nav'},
      button(
        'prev',
        '◀',
        previous ? `Previous step (${previous.step_num})` : 'Previous step',
        previous,
      ),
      el('label', {class: 'sr-only', for: input.id, text: 'Go to step number'}),
      input,
      button('next', '▶', next ? `Next step (${next.step_num})` : 'Next step', next),
    ),
    el(
      'div',
      {class: 'step-jumps'},
      jump('slowest', 'Slowest', slowest),
      jump('fastest', 'Fastest', fastest),
    ),
    message,
  ];
}
