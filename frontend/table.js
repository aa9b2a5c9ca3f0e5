// A sortable, keyboard-accessible table. Header buttons sort (click or Enter/Space; again to
// reverse); rows are focusable and select on click, Enter or Space. Cells are text only.

import {el} from './dom.js';

export class SortableTable {
  /**
   * columns: [{key, label, value(row), text(row), render(row) -> nodes, numeric, title, wrap,
   * sticky (stays at the left when the table scrolls sideways)}];
   * options: {id, label, sort: {key, dir}, onSelect(key), onSort()}.
   */
  constructor(columns, {id, label, sort, onSelect, onSort} = {}) {
    this.columns = columns;
    this.sort = sort || {key: columns[0].key, dir: 'asc'};
    this.onSelect = onSelect;
    this.onSort = onSort;
    this.rows = [];
    this.sorted = [];
    this.selectedKey = '';
    this.headers = new Map();
    const headRow = el('tr');
    for (const column of columns) {
      const button = el(
        'button',
        {
          type: 'button',
          class: 'sort',
          title: column.title || `Sort by ${column.label}`,
          onclick: () => this.sortBy(column.key),
        },
        el('span', {text: column.label}),
        el('span', {class: 'sort-arrow', 'aria-hidden': 'true'}),
      );
      const th = el(
        'th',
        {
          scope: 'col',
          class: [column.numeric ? 'num' : '', column.sticky ? 'sticky-col' : ''].join(' ').trim(),
          'data-key': column.key,
        },
        button,
      );
      this.headers.set(column.key, th);
      headRow.append(th);
    }
    this.body = el('tbody');
    this.table = el(
      'table',
      {class: 'data-table', id},
      el('caption', {class: 'sr-only', text: label || ''}),
      el('thead', {}, headRow),
      this.body,
    );
    this.element = el('div', {class: 'table-wrap'}, this.table);
    this.body.addEventListener('click', (event) => this.activate(event.target));
    this.body.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        this.activate(event.target);
      } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        const tr = event.target.closest('tr');
        const next =
          tr && (event.key === 'ArrowDown' ? tr.nextElementSibling : tr.previousElementSibling);
        if (next) {
          event.preventDefault();
          next.focus();
        }
      }
    });
  }

  activate(target) {
    const tr = target.closest && target.closest('tr[data-key]');
    if (!tr) return;
    const key = tr.dataset.key;
    this.select(key);
    if (this.onSelect) this.onSelect(key);
  }

  sortBy(key) {
    const column = this.columns.find((c) => c.key === key);
    if (this.sort.key === key) this.sort = {key, dir: this.sort.dir === 'asc' ? 'desc' : 'asc'};
    else this.sort = {key, dir: column && column.numeric ? 'desc' : 'asc'};
    this.render();
    const th = this.headers.get(key);
    if (th) th.querySelector('button').focus();
    if (this.onSort) this.onSort(this.sort);
  }

  setRows(rows) {
    this.rows = rows;
    this.render();
  }

  /** The rows in the order shown. */
  visibleRows() {
    return this.sorted;
  }

  render() {
    const column = this.columns.find((c) => c.key === this.sort.key) || this.columns[0];
    const sign = this.sort.dir === 'asc' ? 1 : -1;
    const indexed = this.rows.map((row, i) => [row, i, column.value(row)]);
    indexed.sort((a, b) => {
      const [va, vb] = [a[2], b[2]];
      let order;
      if (typeof va === 'number' && typeof vb === 'number') order = va - vb;
      else order = String(va).localeCompare(String(vb), 'en', {numeric: true});
      return order * sign || a[1] - b[1];
    });
    this.sorted = indexed.map(([row]) => row);
    for (const [key, th] of this.headers) {
      const active = key === this.sort.key;
      th.setAttribute(
        'aria-sort',
        active ? (this.sort.dir === 'asc' ? 'ascending' : 'descending') : 'none',
      );
      th.querySelector('.sort-arrow').textContent = active
        ? this.sort.dir === 'asc'
          ? '▲'
          : '▼'
        : '';
    }
    const fragment = document.createDocumentFragment();
    for (const row of this.sorted) {
      const tr = el('tr', {tabindex: '0', 'data-key': row.key, class: row.rowClass || ''});
      for (const c of this.columns) {
        const cls = [
          c.numeric ? 'num' : '',
          c.wrap ? 'wrap' : '',
          c.sticky ? 'sticky-col' : '',
          c.cellClass || '',
        ]
          .join(' ')
          .trim();
        tr.append(
          c.render
            ? el('td', {class: cls}, c.render(row))
            : el('td', {class: cls, text: c.text(row)}),
        );
      }
      if (row.key === this.selectedKey) {
        tr.classList.add('selected');
        tr.setAttribute('aria-selected', 'true');
      }
      fragment.append(tr);
    }
    this.body.replaceChildren(fragment);
  }

  /** Marks the row of `key` (and scrolls it into view when asked). */
  select(key, {scroll = false} = {}) {
    this.selectedKey = key;
    for (const tr of this.body.querySelectorAll('tr.selected')) {
      tr.classList.remove('selected');
      tr.removeAttribute('aria-selected');
    }
    const tr = [...this.body.children].find((node) => node.dataset.key === key);
    if (!tr) return;
    tr.classList.add('selected');
    tr.setAttribute('aria-selected', 'true');
    if (scroll) tr.scrollIntoView({block: 'nearest'});
  }
}
