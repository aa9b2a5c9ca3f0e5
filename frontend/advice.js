// "Where the time goes": the server's short answer (json `advice`), first on the Roofline
// Model view. The text is the server's (the CLI summary prints the same); an op's line
// selects that op in the table and on the chart.

import {el} from './dom.js';
import {opKey} from './model.js';

/** The answer as a panel, or null when the json has none. */
export function advicePanel(advice, onSelectOp) {
  const items = (advice || []).filter((a) => a && a.text);
  if (!items.length) return null;
  const list = el(
    'ul',
    {class: 'advice-list'},
    items.map((a) => {
      if (a.kind !== 'op') return el('li', {class: `advice-${a.kind || 'note'}`, text: a.text});
      const key = opKey(a.hlo_module_id, a.hlo_name);
      const name = String(a.hlo_name || '');
      const rest = a.text.startsWith(name) ? a.text.slice(name.length) : ` ${a.text}`;
      return el(
        'li',
        {class: 'advice-op'},
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
  return el(
    'section',
    {class: 'panel advice', 'aria-labelledby': 'advice-title'},
    el('h3', {id: 'advice-title', text: 'Where the time goes'}),
    list,
  );
}
