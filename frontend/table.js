// A sortable, keyboard-accessible table. Header buttons sort (click or Enter/Space; again to
// reverse); rows are focusable and select on click, Enter or Space. Cells are text only.
// With a `detail(row)` option each row has a ▸ toggle that opens a block below it.

import {el} from './dom.js';

export class SortableTable {
  /**
   * columns: [{key, label, value(row), text(row), render(row) -> nodes, numeric, title, wrap,
   * sticky (stays at the left when the table scrolls sideways)}];
   * options: {id, label, sort: {key, dir}, onSelect(key), onSort(), detail(row) -> node}.
   */
  constructor(columns, {id, label, sort, onSelect, onSort, detail} = {}) {
    this.columns = columns;
    this.detail = detail;
    this.expanded = new Set(); // keys of the rows whose detail is open
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
    this.body.addEventListener('click', (event) => {
      if (!this.toggleFrom(event.target)) this.activate(event.target);
    });
    this.body.addEventListener('keydown', (event) => {
      if ((event.key === 'Enter' || event.key === ' ') && this.toggleFrom(event.target)) {
        event.preventDefault();
      } else if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        this.activate(event.target);
      } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        const tr = event.target.closest('tr');
        const step = (node) =>
          event.key === 'ArrowDown' ? node.nextElementSibling : node.previousElementSibling;
        let next = tr && step(tr);
        while (next && !next.dataset.key) next = step(next); // past open detail blocks
        if (next) {
          event.preventDefault();
          next.focus();
        }
      }
    });
  }

  /** A click or key on a row's ▸ toggle opens or closes its detail; false elsewhere. */
  toggleFrom(target) {
    const button = target.closest && target.closest('.row-toggle');
    if (!button) return false;
    const tr = button.closest('tr[data-key]');
    const key = tr.dataset.key;
    if (this.expanded.has(key)) this.expanded.delete(key);
    else this.expanded.add(key);
    const open = this.expanded.has(key);
    this.setToggle(button, open);
    const shown = tr.nextElementSibling;
    if (shown && shown.classList.contains('row-detail')) shown.remove();
    if (open) tr.after(this.detailRow(this.sorted.find((row) => row.key === key)));
    return true;
  }

  setToggle(button, open) {
    button.textContent = open ? '▾' : '▸';
    button.setAttribute('aria-expanded', String(open));
    button.title = open ? 'Hide the details' : 'Show the details';
  }

  detailRow(row) {
    return el(
      'tr',
      {class: 'row-detail'},
      el('td', {colspan: String(this.columns.length)}, this.detail(row)),
    );
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
        const td = c.render
          ? el('td', {class: cls}, c.render(row))
          : el('td', {class: cls, text: c.text(row)});
        if (this.detail && c.expander) td.prepend(this.toggle(row));
        tr.append(td);
      }
      if (row.key === this.selectedKey) {
        tr.classList.add('selected');
        tr.setAttribute('aria-selected', 'true');
      }
      fragment.append(tr);
      if (this.detail && this.expanded.has(row.key)) fragment.append(this.detailRow(row));
    }
    this.body.replaceChildren(fragment);
  }

  toggle(row) {
    const button = el('button', {type: 'button', class: 'row-toggle'});
    this.setToggle(button, this.expanded.has(row.key));
    return button;
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
