// Small DOM builders. Profile strings always go in as text (textContent, attribute values),
// never as markup, with their controls and bidi overrides made visible (visibleText).

import {readableMessage, visibleText} from './format.js';

let uid = 0;

/** A unique element id with a readable prefix. */
export function nextId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

/**
 * el('div', {class: 'x', text: 'hello', onclick: fn}, child, ...). `on<event>` keys add
 * listeners; `text` sets textContent; everything else is an attribute (false/null: left out).
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = visibleText(value);
    else if (key.startsWith('on') && typeof value === 'function') {
      node.addEventListener(key.slice(2), value);
    } else node.setAttribute(key, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(visibleText(child)));
  }
}

/**
 * A labelled <select>. options: values or [value, text] pairs. Returns the wrapping label;
 * (label.control is the select, as for every label). Each option, and the select, carry
 * their full text as a title: a long run name cut by the select's width shows on hover.
 */
export function selectField(label, options, value, onChange, attrs = {}) {
  const control = el('select', attrs);
  for (const option of options) {
    const [optionValue, text] = Array.isArray(option) ? option : [option, option];
    const item = el('option', {value: optionValue, text, title: text});
    if (String(optionValue) === String(value)) item.selected = true;
    control.append(item);
  }
  const titled = () => {
    const chosen = control.selectedOptions[0];
    control.title = chosen ? chosen.textContent : '';
  };
  titled();
  control.addEventListener('change', () => {
    titled();
    onChange(control.value);
  });
  const field = el(
    'label',
    {class: 'field'},
    el('span', {class: 'field-label', text: label}),
    control,
  );
  return field;
}

/** A labelled <input>. */
export function inputField(label, attrs, onInput, event = 'input') {
  const control = el('input', attrs);
  control.addEventListener(event, () => onInput(control));
  const field = el(
    'label',
    {class: 'field'},
    el('span', {class: 'field-label', text: label}),
    control,
  );
  return field;
}

/** A labelled checkbox. */
export function checkboxField(label, checked, onChange, attrs = {}) {
  const control = el('input', {type: 'checkbox', ...attrs});
  control.checked = Boolean(checked);
  control.addEventListener('change', () => onChange(control.checked));
  const field = el('label', {class: 'check'}, control, el('span', {text: label}));
  return field;
}

/**
 * A status block: kind is loading | empty | error; `detail` (optional) a second line, often a
 * server message, kept readable (long lists summarised).
 */
export function status(kind, text, detail = '') {
  const role = kind === 'error' ? 'alert' : 'status';
  return el(
    'div',
    {class: `status ${kind}`, role},
    el('p', {class: 'status-title', text}),
    detail ? el('p', {class: 'status-detail', text: readableMessage(detail)}) : null,
  );
}

/** Replaces the children of `node`. */
export function show(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}
