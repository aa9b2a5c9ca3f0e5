// Downloads: CSV / JSON of the rows a table shows (client-side Blob), PNG / SVG of a chart.

import {csvCell, safeFileName} from './format.js';
import {el} from './dom.js';

function download(filename, blob) {
  const href = URL.createObjectURL(blob);
  const link = el('a', {href, download: filename, class: 'sr-only'});
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

/** [key, label, value(row)] of every exported field: a column's raw value, or its parts. */
function fields(table) {
  return table.columns.flatMap((c) => c.exports || [[c.key, c.label, c.csv || c.value]]);
}

/** The visible rows of a SortableTable as CSV: a header of column labels, every cell quoted. */
export function tableCsv(table) {
  const list = fields(table);
  const lines = [list.map(([, label]) => csvCell(label)).join(',')];
  for (const row of table.visibleRows())
    lines.push(list.map(([, , value]) => csvCell(value(row))).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

/** The visible rows as JSON objects keyed by field, with what was selected. */
export function tableJson(table, meta) {
  const list = fields(table);
  const rows = table
    .visibleRows()
    .map((row) => Object.fromEntries(list.map(([key, , value]) => [key, value(row)])));
  return JSON.stringify(
    {...meta, columns: list.map(([key, label]) => ({key, label})), rows},
    null,
    2,
  );
}

export function downloadCsv(table, name) {
  download(
    `${safeFileName(name)}.csv`,
    new Blob([tableCsv(table)], {type: 'text/csv;charset=utf-8'}),
  );
}

export function downloadJson(table, name, meta) {
  download(
    `${safeFileName(name)}.json`,
    new Blob([tableJson(table, meta)], {type: 'application/json'}),
  );
}

/** PNG or SVG of a Plotly chart, through Plotly's own image export. */
export function downloadChart(Plotly, node, format, name) {
  const rect = node.getBoundingClientRect();
  return Plotly.downloadImage(node, {
    format,
    filename: safeFileName(name),
    width: Math.round(rect.width) || 1000,
    height: Math.round(rect.height) || 500,
    scale: format === 'png' ? 2 : 1,
  });
}

/** A row of export buttons: [label, handler] pairs. */
export function exportButtons(label, actions) {
  return el(
    'div',
    {class: 'export', role: 'group', 'aria-label': label},
    actions.map(([text, handler, title]) =>
      el('button', {type: 'button', class: 'small', title: title || text, onclick: handler, text}),
    ),
  );
}
