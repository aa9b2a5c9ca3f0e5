// The sidebar: Tool, then Run / Host / Step / infeed-outfeed (Roofline Model) or the A and B
// selections (Roofline Compare), and where the device peaks came from.

import {devicePicker} from './device_picker.js';
import {checkboxField, el, selectField, show} from './dom.js';
import {stepsPhrase} from './format.js';
import {peaksField} from './peaks.js';
import {stepsWithoutOps} from './state.js';
import {stepPicker} from './step_picker.js';

export const TOOLS = [
  ['model', 'Roofline Model'],
  ['compare', 'Roofline Compare'],
  ['layers', 'Roofline Layers'],
];

function hostOptions(hosts) {
  return hosts.map((h) => [h, h === 'ALL_HOSTS' ? 'All hosts' : h]);
}

function stepNote(steps) {
  if (!steps) return null;
  if (stepsWithoutOps(steps)) return null; // the device panel's note says why: only Total
  if (!steps.has_step_markers)
    return el('p', {
      class: 'hint',
      'data-note': 'no-step-markers',
      text: 'No step markers in this profile: only the whole profile (Total) can be shown.',
    });
  const cut = (steps.steps || []).filter((s) => !s.complete).map((s) => s.step_num);
  if (cut.length) {
    return el('p', {
      class: 'hint',
      'data-note': 'incomplete-steps',
      text: `${stepsPhrase(cut)} ${cut.length === 1 ? 'was' : 'were'} cut by the profile window (incomplete) and ${cut.length === 1 ? 'is' : 'are'} left out of the average.`,
    });
  }
  return null;
}

/**
 * What the logdir holds but is not read (stray *.xplane.pb files, misnamed traces): one
 * warning each, its first clause ("… is not read (loose.xplane.pb)") shown and the rest (how
 * to lay the files out) a click away.
 */
export function logdirNotes(notes) {
  if (!notes || !notes.length) return null;
  return el(
    'div',
    {class: 'logdir-notes', 'data-note': 'logdir'},
    notes.map((text) => {
      const cut = text.indexOf('): ');
      const head = cut > 0 ? text.slice(0, cut + 1) : text;
      const rest = cut > 0 ? text.slice(cut + 3) : '';
      return el(
        'details',
        {class: 'hint warning', title: text},
        el('summary', {text: head}),
        rest ? el('p', {text: rest}) : null,
      );
    }),
  );
}

/** One compare side: run, host, step selects in a fieldset. */
function sideFields(side, label, choice, lists, on) {
  const prefix = `${side}-`;
  return el(
    'fieldset',
    {class: `side-fields side-${side}`},
    el('legend', {}, el('span', {class: `side ${side}`, text: side.toUpperCase()}), ` ${label}`),
    selectField('Run', lists.runs, choice.run, (v) => on.run(side, v), {id: `${prefix}run`}),
    selectField('Host', hostOptions(lists.hosts), choice.host, (v) => on.host(side, v), {
      id: `${prefix}host`,
    }),
    stepPicker({
      id: `${prefix}step`,
      steps: lists.steps,
      value: choice.step,
      onChange: (v) => on.step(side, v),
    }),
  );
}

/**
 * Draws the sidebar into `node`. s: the state; sides: {a, b} lists of hosts and steps per
 * compare side; on: {tool, run, host, step, device, include, peaks, side: {run, host, step}}
 * handlers;
 * peaksChoices: the `peaks` route's answer (null until known).
 */
export function renderSidebar(node, s, sides, on, peaksText, peaksChoices = null) {
  const parts = [
    el('h1', {class: 'brand', text: 'Roofline'}),
    selectField('Tool', TOOLS, s.tool, on.tool, {id: 'tool-select'}),
  ];
  if (s.tool === 'compare') {
    parts.push(
      sideFields('a', 'baseline', s.compare.a, {runs: s.runs, ...sides.a}, on.side),
      sideFields('b', 'compared with A', s.compare.b, {runs: s.runs, ...sides.b}, on.side),
      el('p', {
        class: 'hint',
        text: 'Ops are matched by program and name; "Total" compares per step, as its Average step (the mean complete step).',
      }),
    );
  } else {
    parts.push(
      selectField('Run', s.runs, s.run, on.run, {id: 'run-select'}),
      logdirNotes(s.logdirNotes),
      selectField('Host', hostOptions(s.hosts), s.host, on.host, {id: 'host-select'}),
      stepPicker({
        id: 'step-select',
        steps: s.steps,
        value: s.step,
        onChange: on.step,
        loading: s.stepsLoading,
      }),
      s.stepsLoading ? null : stepNote(s.steps),
      devicePicker({id: 'device-select', devices: s.devices, value: s.device, onChange: on.device}),
      checkboxField('Include infeed / outfeed ops', s.include, on.include, {id: 'include-toggle'}),
    );
  }
  parts.push(
    peaksField(peaksChoices, s.peaks, on.peaks),
    el(
      'div',
      {class: 'peaks-source', id: 'peaks-source'},
      el('span', {class: 'field-label', text: 'Device peaks from'}),
      el('span', {class: 'value', text: peaksText || '—'}),
    ),
    el('p', {
      class: 'hint',
      text: 'Charts use FLOP/s against FLOP/byte with bytes in SI units (1 GB = 10⁹ bytes), so every roof meets its compute peak exactly at its ridge point.',
    }),
  );
  show(node, parts);
}
