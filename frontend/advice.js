// "Where the time goes": the server's short answer (json `advice`), first on the Roofline
// Model view. The text is the server's (the CLI summary prints the same); an op's line
// selects that op in the table and on the chart.

import {el} from './dom.js';
import {opKey} from './model.js';

const SHOWN_OPS = 3; // op lines shown at first (the rest one click away): the chart stays in view

/** The answer as a panel, or null when the json has none. */
export function advicePanel(advice, onSelectOp) {
  const items = (advice || []).filter((a) => a && a.text);
  if (!items.length) return null;
  let ops = 0;
  const list = el(
    'ul',
    {class: 'advice-list'},
    items.map((a) => {
      if (a.kind !== 'op') return el('li', {class: `advice-${a.kind || 'note'}`, text: a.text});
      ops += 1;
      const key = opKey(a.hlo_module_id, a.hlo_name);
      const name = String(a.hlo_name || '');
      const rest = a.text.startsWith(name) ? a.text.slice(name.length) : ` ${a.text}`;
      const more = ops > SHOWN_OPS;
      return el(
        'li',
        {class: more ? 'advice-op advice-more' : 'advice-op', hidden: more},
        el('button', {
          type: 'button',
          class: 'link-button op-name',
          title: 'Select this op in the table and on the chart',
          text: name,
          onclick: () => onSelectOp(key),
        }),
        rest,
      );
    }),
  );
  const hidden = ops - SHOWN_OPS;
  const toggle =
    hidden > 0
      ? el('button', {
          type: 'button',
          class: 'link-button advice-toggle',
          'aria-expanded': 'false',
          text: `${hidden} more op${hidden === 1 ? '' : 's'}`,
          onclick: (event) => {
            const button = event.currentTarget;
            const open = button.getAttribute('aria-expanded') !== 'true';
            for (const li of list.querySelectorAll('.advice-more')) li.hidden = !open;
            button.setAttribute('aria-expanded', String(open));
            button.textContent = open ? 'fewer ops' : `${hidden} more op${hidden === 1 ? '' : 's'}`;
          },
        })
      : null;
  return el(
    'section',
    {class: 'panel advice', 'aria-labelledby': 'advice-title'},
    el(
      'div',
      {class: 'section-head'},
      el('h3', {id: 'advice-title', text: 'Where the time goes'}),
      toggle,
    ),
    list,
  );
}
