// A chart's first view as a plain SVG, drawn from the same figure and layout Plotly is then
// given (charts.js `drawStatic`): the page shows the op chart as soon as its data is here,
// while the chart library (4.8 MB, over a second of main thread the first time) loads; Plotly
// then draws over it and this view is removed (no hover, zoom or legend clicks meanwhile).
//
// It draws what the roofline figures use, and no more: log–log axes with their ticks, grid and
// titles, line and filled traces (dashes), markers (symbol, colour, outline, size by area),
// annotations (labels, turned, over a box, with an arrow) and the legend. Positions are
// Plotly's: the plot area is the layout's margins rounded, a value at its log10 along the
// axis range. Text goes in as text (profile strings come escaped for Plotly's HTML: the few
// tags Plotly reads are read here, the entities decoded).

import {textBox} from './chart_labels.js';

const NS = 'http://www.w3.org/2000/svg';
const LINE_EM = 1.3; // a text line's height, in ems
const LEGEND_ROW_PX = 19; // as charts.js's estimate of Plotly's legend
const LEGEND_LINE_PX = 13; // each further line of an item
const LEGEND_GROUP_GAP_PX = 10;
const LEGEND_TEXT_X_PX = 40; // the item's text starts this far from its symbol's group
const DASHES = {
  solid: null,
  dot: [1, 1],
  dash: [3, 3],
  longdash: [5, 5],
  dashdot: [3, 1, 1, 1],
  longdashdot: [5, 2, 1, 2],
};
let uid = 0;

function node(tag, attrs = {}) {
  const n = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs))
    if (value !== undefined && value !== null) n.setAttribute(key, String(value));
  return n;
}

const at = (value, i) => (Array.isArray(value) ? value[i] : value);

const ENTITIES = {amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0'};

/** The text of an HTML fragment's entities (`&amp;`, `&#39;`, `&#x27;`). */
function decode(text) {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name) => {
    if (name[0] === '#') {
      const code =
        name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : +name.slice(1);
      return Number.isFinite(code) ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/**
 * A <text> of Plotly-style rich text (lines split at <br>, <b> and <i> kept, other tags
 * dropped), centred on its lines' middle at y; `anchor`: start, middle or end at x.
 */
function richText(source, x, y, {size, color, family, anchor = 'middle', weight} = {}) {
  const text = node('text', {
    x,
    'font-size': size,
    'font-family': family,
    fill: color,
    'text-anchor': anchor,
    'font-weight': weight,
  });
  const lines = String(source).split(/<br\s*\/?>/i);
  const first = y - ((lines.length - 1) * size * LINE_EM) / 2 + size * 0.35;
  lines.forEach((line, i) => {
    const row = node('tspan', {x, y: first + i * size * LINE_EM});
    let bold = false;
    let italic = false;
    for (const part of line.split(/(<\/?[a-z]+[^>]*>)/i)) {
      const tag = /^<(\/?)([a-z]+)/i.exec(part);
      if (tag) {
        const on = !tag[1];
        if (tag[2].toLowerCase() === 'b') bold = on;
        if (tag[2].toLowerCase() === 'i') italic = on;
        continue;
      }
      if (!part) continue;
      const span = node('tspan', {
        'font-weight': bold ? 'bold' : undefined,
        'font-style': italic ? 'italic' : undefined,
      });
      span.textContent = decode(part);
      row.append(span);
    }
    text.append(row);
  });
  return text;
}

/** A regular polygon's points around (0, 0): `n` corners at radius r, the first straight up. */
function polygon(n, r, turn = 0) {
  const points = [];
  for (let k = 0; k < n; k++) {
    const a = -Math.PI / 2 + turn + (2 * Math.PI * k) / n;
    points.push([r * Math.cos(a), r * Math.sin(a)]);
  }
  return points;
}

function star(r) {
  const points = [];
  for (let k = 0; k < 10; k++) {
    const a = -Math.PI / 2 + (Math.PI * k) / 5;
    const radius = k % 2 ? r * 0.55 : r * 1.4;
    points.push([radius * Math.cos(a), radius * Math.sin(a)]);
  }
  return points;
}

/** A plus sign of arms `r` long and `r / 1.5` wide, turned by `turn` radians. */
function plus(r, turn) {
  const w = r / 3;
  const corners = [
    [w, -r],
    [w, -w],
    [r, -w],
    [r, w],
    [w, w],
    [w, r],
    [-w, r],
    [-w, w],
    [-r, w],
    [-r, -w],
    [-w, -w],
    [-w, -r],
  ];
  const c = Math.cos(turn);
  const s = Math.sin(turn);
  return corners.map(([x, y]) => [x * c - y * s, x * s + y * c]);
}

/** The outline of a marker symbol of radius r around (0, 0), as an SVG path. */
function symbolPath(symbol, r) {
  const shape = {
    square: () => [
      [r, r],
      [-r, r],
      [-r, -r],
      [r, -r],
    ],
    diamond: () => polygon(4, r * 1.3),
    'triangle-up': () => polygon(3, r * 1.25),
    'triangle-down': () => polygon(3, r * 1.25, Math.PI),
    pentagon: () => polygon(5, r * 1.1),
    hexagon: () => polygon(6, r * 1.05, Math.PI / 6),
    star: () => star(r),
    cross: () => plus(r * 1.2, 0),
    x: () => plus(r * 1.2, Math.PI / 4),
  }[symbol];
  if (!shape) return `M${r},0A${r},${r} 0 1,1 0,-${r}A${r},${r} 0 0,1 ${r},0Z`; // circle
  return `M${shape()
    .map(([x, y]) => `${x.toFixed(2)},${y.toFixed(2)}`)
    .join('L')}Z`;
}

/** A marker: its symbol (`-open`: outline only) at (x, y), radius r. */
function marker(x, y, r, {symbol = 'circle', color, lineColor, lineWidth = 0, opacity = 1}) {
  const open = String(symbol).endsWith('-open');
  const base = String(symbol).replace(/-open$/, '');
  return node('path', {
    class: 'point',
    d: symbolPath(base, r),
    transform: `translate(${x},${y})`,
    fill: open ? 'none' : color,
    stroke: open ? lineColor || color : lineWidth > 0 ? lineColor : 'none',
    'stroke-width': open ? Math.max(lineWidth, 1) : lineWidth,
    opacity,
  });
}

function dashArray(dash, width) {
  const pattern = DASHES[dash || 'solid'];
  if (!pattern) return undefined;
  const unit = Math.max(width, 3);
  return pattern.map((k) => `${k * unit}px`).join(',');
}

/** The radius (px) of each point of a trace's markers, as Plotly sizes them. */
function radii(trace, count) {
  const m = trace.marker || {};
  if (!Array.isArray(m.size)) return () => (m.size ?? 6) / 2;
  const sizeref = m.sizeref || 1;
  const sizemin = m.sizemin || 0;
  const base = m.sizemode === 'area' ? (v) => Math.sqrt(v / 2 / sizeref) : (v) => v / 2 / sizeref;
  const list = Array.from({length: count}, (_, i) => {
    const r = base(Math.max(+m.size[i] || 0, 0));
    return r > 0 ? Math.max(r, sizemin) : 0;
  });
  return (i) => list[i];
}

/** The plot area of a layout in a chart `width` px wide: Plotly's rounded margins. */
export function plotArea(layout, width) {
  const m = layout.margin;
  const l = Math.round(m.l);
  const t = Math.round(m.t);
  const w = Math.round(width) - l - Math.round(m.r);
  const h = Math.round(layout.height) - t - Math.round(m.b);
  const [x0, x1] = layout.xaxis.range;
  const [y0, y1] = layout.yaxis.range;
  return {
    l,
    t,
    w,
    h,
    x: (v) => l + ((Math.log10(v) - x0) * w) / (x1 - x0),
    y: (v) => t + ((y1 - Math.log10(v)) * h) / (y1 - y0),
    xLog: (v) => l + ((v - x0) * w) / (x1 - x0),
    yLog: (v) => t + ((y1 - v) * h) / (y1 - y0),
  };
}

function axes(svg, layout, area) {
  const font = layout.font || {};
  const size = font.size || 12;
  const within = (v, [a, b]) =>
    Math.log10(v) >= Math.min(a, b) - 1e-9 && Math.log10(v) <= Math.max(a, b) + 1e-9;
  const grid = node('g', {class: 'static-grid', stroke: layout.xaxis.gridcolor, 'stroke-width': 1});
  const ticks = node('g', {class: 'static-ticks'});
  layout.xaxis.tickvals.forEach((v, i) => {
    if (!within(v, layout.xaxis.range)) return;
    const x = area.x(v);
    grid.append(node('line', {x1: x, x2: x, y1: area.t, y2: area.t + area.h}));
    const label = layout.xaxis.ticktext[i];
    if (label)
      ticks.append(
        richText(label, x, area.t + area.h + 4 + size / 2, {
          size,
          color: font.color,
          family: font.family,
        }),
      );
  });
  let widest = 0;
  layout.yaxis.tickvals.forEach((v, i) => {
    if (!within(v, layout.yaxis.range)) return;
    const y = area.y(v);
    grid.append(node('line', {x1: area.l, x2: area.l + area.w, y1: y, y2: y}));
    const label = layout.yaxis.ticktext[i];
    if (!label) return;
    widest = Math.max(widest, textBox(label, size)[0]);
    ticks.append(
      richText(label, area.l - 4, y, {size, color: font.color, family: font.family, anchor: 'end'}),
    );
  });
  svg.append(grid, ticks);
  const titleSize = Math.round(size * 1.2); // Plotly's axis titles
  const title = (text, x, y, turn) => {
    const t = richText(text, x, y, {size: titleSize, color: font.color, family: font.family});
    if (turn) t.setAttribute('transform', `rotate(-90,${x},${y})`);
    t.setAttribute('class', 'static-axis-title');
    return t;
  };
  svg.append(
    title(layout.xaxis.title.text, area.l + area.w / 2, area.t + area.h + 16 + size + titleSize),
    title(
      layout.yaxis.title.text,
      Math.max(area.l - widest - 8 - titleSize / 2, titleSize / 2 + 1),
      area.t + area.h / 2,
      true,
    ),
  );
}

function traces(plot, data, area) {
  for (const trace of data) {
    if (trace.visible === false || trace.visible === 'legendonly') continue;
    const xs = trace.x || [];
    const ys = trace.y || [];
    const points = [];
    xs.forEach((x, i) => {
      const y = ys[i];
      if (x > 0 && y > 0) points.push([area.x(x), area.y(y), i]);
    });
    const mode = trace.mode || '';
    if (trace.fill === 'toself' && points.length > 2) {
      plot.append(
        node('polygon', {
          class: 'static-fill',
          points: points.map(([x, y]) => `${x},${y}`).join(' '),
          fill: trace.fillcolor,
          stroke: 'none',
        }),
      );
    }
    const line = trace.line || {};
    if (mode.includes('lines') && points.length > 1 && (line.width ?? 2) > 0) {
      plot.append(
        node('polyline', {
          class: 'static-line',
          'data-kind': (trace.meta || {}).kind,
          points: points.map(([x, y]) => `${x},${y}`).join(' '),
          fill: 'none',
          stroke: line.color,
          'stroke-width': line.width ?? 2,
          'stroke-dasharray': dashArray(line.dash, line.width ?? 2),
          opacity: trace.opacity,
        }),
      );
    }
    if (mode.includes('markers') && points.length) {
      const m = trace.marker || {};
      const mline = m.line || {};
      const radius = radii(trace, xs.length);
      const group = node('g', {class: 'static-points', 'data-kind': (trace.meta || {}).kind});
      for (const [x, y, i] of points) {
        const r = radius(i);
        if (!(r > 0)) continue;
        const dot = marker(x, y, r, {
          symbol: at(m.symbol, i),
          color: at(m.color, i),
          lineColor: at(mline.color, i),
          lineWidth: at(mline.width, i) ?? 0,
          opacity: at(m.opacity, i) ?? 1,
        });
        if (trace.customdata) dot.setAttribute('data-key', String(trace.customdata[i]));
        group.append(dot);
      }
      plot.append(group);
    }
  }
}

/** The point where the segment from a box's centre to `to` leaves the box (half sizes hw, hh). */
function edge([cx, cy], [tx, ty], hw, hh) {
  const dx = tx - cx;
  const dy = ty - cy;
  const s = Math.min(dx ? hw / Math.abs(dx) : Infinity, dy ? hh / Math.abs(dy) : Infinity, 1);
  return [cx + dx * s, cy + dy * s];
}

function annotations(svg, layout, area) {
  const family = (layout.font || {}).family;
  const group = node('g', {class: 'static-annotations'});
  for (const a of layout.annotations || []) {
    const size = (a.font && a.font.size) || 12;
    const color = (a.font && a.font.color) || (layout.font || {}).color;
    const head = [area.xLog(a.x), area.yLog(a.y)];
    const [w, h] = textBox(a.text, size);
    if (a.showarrow) {
      const pixel = a.axref !== 'x';
      const centre = pixel ? [head[0] + a.ax, head[1] + a.ay] : [area.xLog(a.ax), area.yLog(a.ay)];
      const from = a.text ? edge(centre, head, w / 2 + 2, h / 2 + 2) : centre;
      group.append(
        node('line', {
          class: 'static-arrow',
          x1: from[0],
          y1: from[1],
          x2: head[0],
          y2: head[1],
          stroke: a.arrowcolor || color,
          'stroke-width': a.arrowwidth || 1,
        }),
      );
      if (a.text) group.append(richText(a.text, centre[0], centre[1], {size, color, family}));
      continue;
    }
    const label = node('g', {
      class: 'static-label',
      'data-name': a.name,
      transform: a.textangle ? `rotate(${a.textangle},${head[0]},${head[1]})` : undefined,
    });
    if (a.bgcolor) {
      const pad = a.borderpad || 0;
      label.append(
        node('rect', {
          x: head[0] - w / 2 - pad,
          y: head[1] - h / 2 - pad,
          width: w + 2 * pad,
          height: h + 2 * pad,
          fill: a.bgcolor,
        }),
      );
    }
    label.append(richText(a.text, head[0], head[1], {size, color, family}));
    group.append(label);
  }
  svg.append(group);
}

/** A legend item's sample: a line (dashed as its trace) or its marker. */
function legendSample(trace, x, y) {
  if ((trace.mode || '').includes('lines')) {
    const line = trace.line || {};
    return node('line', {
      x1: x - 15,
      x2: x + 15,
      y1: y,
      y2: y,
      stroke: line.color,
      'stroke-width': 4, // the legend's constant item size
      'stroke-dasharray': dashArray(line.dash, 4),
      opacity: trace.opacity,
    });
  }
  const m = trace.marker || {};
  const mline = m.line || {};
  return marker(x, y, Math.min((typeof m.size === 'number' ? m.size : 10) / 2, 10), {
    symbol: at(m.symbol, 0),
    color: at(m.color, 0),
    lineColor: at(mline.color, 0),
    lineWidth: Math.min(at(mline.width, 0) ?? 0, 2),
  });
}

/** The legend's groups as Plotly draws them: [{title, items: [traces]}] (this first view's
 * legend and charts.js's placement of Plotly's). */
export function legendGroups(data) {
  const groups = new Map();
  for (const t of data) {
    if (t.showlegend === false || !t.name) continue;
    const key = t.legendgroup || `trace:${t.name}`;
    if (!groups.has(key)) groups.set(key, {title: '', items: []});
    const group = groups.get(key);
    if (t.legendgrouptitle && t.legendgrouptitle.text) group.title = t.legendgrouptitle.text;
    group.items.push(t);
  }
  return [...groups.values()];
}

function legend(svg, data, layout, area, width) {
  if (layout.showlegend === false) return;
  const spec = layout.legend || {};
  const groups = legendGroups(data);
  if (!groups.length) return;
  const font = layout.font || {};
  const size = (spec.font && spec.font.size) || 11;
  const g = node('g', {class: 'static-legend'});
  const drawGroup = (group, left, top) => {
    let y = top;
    if (group.title) {
      g.append(
        richText(group.title, left + 4, y + LEGEND_ROW_PX / 2, {
          size: size + 1,
          color: font.color,
          family: font.family,
          anchor: 'start',
        }),
      );
      y += LEGEND_ROW_PX;
    }
    for (const trace of group.items) {
      const lines = String(trace.name).split(/<br\s*\/?>/i).length;
      const tall = LEGEND_ROW_PX + (lines - 1) * LEGEND_LINE_PX;
      const middle = y + tall / 2;
      g.append(legendSample(trace, left + 20, y + LEGEND_ROW_PX / 2));
      g.append(
        richText(trace.name, left + LEGEND_TEXT_X_PX, middle, {
          size,
          color: font.color,
          family: font.family,
          anchor: 'start',
        }),
      );
      y += tall;
    }
    return y;
  };
  const widthOf = (group) =>
    Math.max(
      ...group.items.map((t) => textBox(t.name, size)[0] + LEGEND_TEXT_X_PX - 32),
      group.title ? textBox(group.title, size + 1)[0] + 8 : 0,
    );
  if (spec.orientation === 'h') {
    const height = Math.round(layout.height);
    const rows = [];
    let row = [];
    let used = 0;
    for (const group of groups) {
      const w = widthOf(group) + 24;
      if (row.length && used + w > width - 16) {
        rows.push(row);
        row = [];
        used = 0;
      }
      row.push([group, w]);
      used += w;
    }
    if (row.length) rows.push(row);
    const rowHeight = (list) =>
      Math.max(
        ...list.map(
          ([group]) =>
            group.items.reduce(
              (n, t) =>
                n +
                LEGEND_ROW_PX +
                (String(t.name).split(/<br\s*\/?>/i).length - 1) * LEGEND_LINE_PX,
              0,
            ) + (group.title ? LEGEND_ROW_PX : 0),
        ),
      );
    let top = height - rows.reduce((sum, list) => sum + rowHeight(list), 0) + 6;
    for (const list of rows) {
      let left = area.l;
      for (const [group, w] of list) {
        drawGroup(group, left, top);
        left += w;
      }
      top += rowHeight(list);
    }
  } else {
    let top = area.t + 6;
    const left = area.l + area.w + 2;
    for (const group of groups) top = drawGroup(group, left, top) + LEGEND_GROUP_GAP_PX;
  }
  svg.append(g);
}

/**
 * The SVG of a figure: `data` and `layout` as given to Plotly (layout.height and margin set,
 * its annotations written), for a chart `width` px wide.
 */
export function staticFigure(data, layout, width) {
  const height = Math.round(layout.height);
  const area = plotArea(layout, width);
  const svg = node('svg', {
    class: 'static-chart',
    width: Math.round(width),
    height,
    viewBox: `0 0 ${Math.round(width)} ${height}`,
    role: 'img',
    'aria-label': 'Roofline chart (interactive once the chart library is ready)',
  });
  svg.append(
    node('rect', {x: 0, y: 0, width: Math.round(width), height, fill: layout.paper_bgcolor}),
  );
  svg.append(
    node('rect', {x: area.l, y: area.t, width: area.w, height: area.h, fill: layout.plot_bgcolor}),
  );
  axes(svg, layout, area);
  const clip = `static-clip-${++uid}`;
  const defs = node('defs');
  const clipPath = node('clipPath', {id: clip});
  clipPath.append(node('rect', {x: area.l, y: area.t, width: area.w, height: area.h}));
  defs.append(clipPath);
  svg.append(defs);
  const plot = node('g', {class: 'static-plot', 'clip-path': `url(#${clip})`});
  traces(plot, data, area);
  svg.append(plot);
  annotations(svg, layout, area);
  legend(svg, data, layout, area, width);
  return svg;
}
