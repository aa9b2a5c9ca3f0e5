// The filter bar of the op chart and table: category, bound by, op-name regex, program,
// minimum share of time, top-N. An invalid regex shows a message instead of failing.

import {el, inputField, selectField} from './dom.js';
import {DEFAULT_FILTERS} from './state.js';
import {distinct} from './model.js';

/**
 * rows: every op row of the selection (for the choices); filters: the current values;
 * onChange(filters) on every edit. Returns {element, setError(text)}.
 */
export function filterBar(rows, filters, onChange) {
  const current = {...filters};
  const update = (patch) => {
    Object.assign(current, patch);
    onChange({...current});
  };
  const all = (values, word) => [['', `All ${word}`], ...values.map((v) => [v, v || '(none)'])];
  const categories = distinct(rows, 'category');
  const bounds = distinct(rows, 'boundBy');
  const programs = distinct(rows, 'program');
  if (current.category && !categories.includes(current.category)) current.category = '';
  if (current.boundBy && !bounds.includes(current.boundBy)) current.boundBy = '';
  if (current.program && !programs.includes(current.program)) current.program = '';

  const message = el('p', {class: 'filter-error', role: 'alert', 'aria-live': 'polite'});
  const category = selectField(
    'Category',
    all(categories, 'categories'),
    current.category,
    (v) => update({category: v}),
    {id: 'filter-category'},
  );
  const bound = selectField(
    'Bound by',
    all(bounds, 'bounds'),
    current.boundBy,
    (v) => update({boundBy: v}),
    {id: 'filter-bound'},
  );
  const programLabels = new Map(rows.map((r) => [r.program, r.programLabel || r.program]));
  const program = selectField(
    'Program',
    [['', 'All programs'], ...programs.map((v) => [v, programLabels.get(v) || v || '(none)'])],
    current.program,
    (v) => update({program: v}),
    {id: 'filter-program'},
  );
  const regex = inputField(
    'Op name (regex)',
    {
      type: 'search',
      id: 'filter-regex',
      value: current.regex,
      placeholder: 'e.g. ^fusion',
      spellcheck: 'false',
      autocomplete: 'off',
    },
    (input) => update({regex: input.value}),
  );
  const minShare = inputField(
    'Min. share of time (%)',
    {
      type: 'number',
      id: 'filter-share',
      min: '0',
      max: '100',
      step: '0.1',
      value: current.minShare || '',
      placeholder: '0',
    },
    (input) => update({minShare: Number(input.value) || 0}),
  );
  const topN = inputField(
    'Top N (by self time)',
    {
      type: 'number',
      id: 'filter-topn',
      min: '0',
      step: '1',
      value: current.topN || '',
      placeholder: 'all',
    },
    (input) => update({topN: Math.max(0, Math.floor(Number(input.value) || 0))}),
  );
  const reset = el('button', {
    type: 'button',
    class: 'small',
    id: 'filter-reset',
    text: 'Reset filters',
    onclick: () => {
      category.control.value = '';
      bound.control.value = '';
      program.control.value = '';
      regex.control.value = '';
      minShare.control.value = '';
      topN.control.value = '';
      update({...DEFAULT_FILTERS});
    },
  });
  const element = el(
    'div',
    {class: 'filters', role: 'group', 'aria-label': 'Filters for the op chart and table'},
    category,
    bound,
    regex,
    program,
    minShare,
    topN,
    el('div', {class: 'field reset'}, reset),
    message,
  );
  return {
    element,
    filters: current,
    setError(text) {
      message.textContent = text || '';
      regex.control.setAttribute('aria-invalid', text ? 'true' : 'false');
    },
  };
}
