// What an op is known by: its shapes, HLO line, framework op (JAX op_name, TF op, PyTorch
// module), source line and program. The json's op details carry them (`shapes`, `hlo_text`,
// `framework_op`, `source`); the chart's hover gets a line each (identityHover), a table row
// a short line under its name (identityLine) and, opened with its ▸ toggle, a block of them
// all (opDetail).

import {el} from './dom.js';
import {escapeHtml as esc} from './format.js';

/** The fields of an op row that tell it apart, from its op details `d` (json `ops`). */
export function opIdentity(d = {}) {
  return {
    shapes: d.shapes || '',
    hloText: d.hlo_text || '',
    frameworkOp: d.framework_op || '',
    source: d.source || '',
  };
}

/** Hover lines (HTML, profile strings escaped): shapes, framework op, source line. */
export function identityHover(row) {
  const lines = [];
  if (row.shapes) lines.push(`shapes ${esc(row.shapes)}`);
  if (row.frameworkOp) lines.push(`framework op ${esc(row.frameworkOp)}`);
  if (row.source) lines.push(`source ${esc(row.source)}`);
  return lines;
}

/** One short line under an op's name in the table: its shapes · framework op (or null). */
export function identityLine(row) {
  const text = [row.shapes, row.frameworkOp].filter(Boolean).join(' · ');
  return text ? el('span', {class: 'op-identity', text, title: text}) : null;
}

const DETAIL_FIELDS = [
  ['HLO', (r) => r.hloText, 'code'],
  ['Shapes', (r) => r.shapes, 'code'],
  ['dtype', (r) => r.dtype],
  ['Framework op', (r) => r.frameworkOp, 'code'],
  ['Source', (r) => r.source, 'code'],
  ['Program', (r) => r.programLabel || r.program],
  ['Category', (r) => r.category],
];

/** The block a row opens to: every field the profile has for the op (name: value). */
export function opDetail(row) {
  const items = [];
  for (const [label, value, kind] of DETAIL_FIELDS) {
    const text = value(row);
    if (!text) continue;
    items.push(el('dt', {text: label}), el('dd', {}, kind === 'code' ? el('code', {text}) : text));
  }
  if (!items.length) items.push(el('dd', {text: 'The profile says nothing more of this op.'}));
  return el('dl', {class: 'op-detail', 'data-detail': row.key}, items);
}
