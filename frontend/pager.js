// Page controls for a long table: first / previous / next / last buttons and where we are
// ("Steps 51–100 of 1,500"), as a labelled nav so screen readers can find it.

import {el} from './dom.js';

/** The page count of `count` items, `size` to a page (at least 1). */
export function pageCount(count, size) {
  return Math.max(1, Math.ceil(count / size));
}

/**
 * id: the nav's id (its buttons are `${id}-first`, `-prev`, `-next`, `-last`); page: 0-based;
 * pages: the count; text: where we are; label: what is paged; onPage(page).
 */
export function pager({id, page, pages, text, label, onPage}) {
  const button = (suffix, glyph, title, target) =>
    el('button', {
      type: 'button',
      class: 'small',
      id: `${id}-${suffix}`,
      text: glyph,
      title,
      'aria-label': title,
      disabled: target < 0 || target >= pages || target === page,
      onclick: () => onPage(target),
    });
  return el(
    'nav',
    {class: 'pager', id, 'aria-label': label},
    button('first', '«', 'First page', 0),
    button('prev', '‹', 'Previous page', page - 1),
    el('span', {class: 'pager-text', 'aria-live': 'polite', text}),
    button('next', '›', 'Next page', page + 1),
    button('last', '»', 'Last page', pages - 1),
  );
}
