// Labels written on a chart (roofs, ceilings, ridge points, regions) placed so that none
// covers another: each label has candidate places, in order of preference; the first that
// stays inside the plot and clear of the labels already placed wins, the one covering the
// fewest dots among those. Pure geometry in pixels over log–log axes; no DOM, no Plotly.

const CHAR_EM = 0.56; // average glyph width of the chart's sans-serif font, in ems
const LINE_EM = 1.3; // a line's height, in ems
const PAD_PX = 3; // clear space kept around each label

/**
 * The pixel frame of a plot: log10 axis ranges (as Plotly's log axes keep them) and the plot
 * area's size. `px(x, y)` maps data values (not logs) to pixels from the plot's top-left.
 */
export function frame({x, y, w, h}) {
  const sx = w / (x[1] - x[0] || 1);
  const sy = h / (y[1] - y[0] || 1);
  return {
    x,
    y,
    w,
    h,
    pxPerDecadeX: sx,
    pxPerDecadeY: sy,
    px: (vx, vy) => [(Math.log10(vx) - x[0]) * sx, h - (Math.log10(vy) - y[0]) * sy],
    data: (px, py) => [10 ** (x[0] + px / sx), 10 ** (y[0] + (h - py) / sy)],
  };
}

/** A label's box in pixels (width, height) at a font size; bold (<b>) text is wider. */
export function textBox(text, size) {
  const source = String(text);
  const em = source.includes('<b>') ? CHAR_EM * 1.1 : CHAR_EM;
  const lines = source
    .split(/<br\s*\/?>/i)
    .map((line) => line.replace(/<[^>]*>/g, '').replace(/&[a-z]+;|&#\d+;/g, '_'));
  const longest = Math.max(...lines.map((line) => line.length));
  return [Math.ceil(longest * size * em) + 2, Math.ceil(size * LINE_EM * lines.length)];
}

/** The four corners of a box of size [w, h] centred at c, turned by `angle` degrees (up +). */
function corners([cx, cy], [w, h], angle) {
  const a = (-angle * Math.PI) / 180; // screen y grows downwards
  const ux = [Math.cos(a), Math.sin(a)];
  const uy = [-Math.sin(a), Math.cos(a)];
  const hw = w / 2 + PAD_PX;
  const hh = h / 2 + PAD_PX;
  return [
    [-hw, -hh],
    [hw, -hh],
    [hw, hh],
    [-hw, hh],
  ].map(([p, q]) => [cx + p * ux[0] + q * uy[0], cy + p * ux[1] + q * uy[1]]);
}

function project(points, axis) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const [px, py] of points) {
    const v = px * axis[0] + py * axis[1];
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  return [lo, hi];
}

/** True when two convex polygons overlap (separating axis test). */
export function overlaps(a, b) {
  for (const poly of [a, b]) {
    for (let i = 0; i < poly.length; i++) {
      const [x1, y1] = poly[i];
      const [x2, y2] = poly[(i + 1) % poly.length];
      const axis = [y1 - y2, x2 - x1];
      const [a0, a1] = project(a, axis);
      const [b0, b1] = project(b, axis);
      if (a1 <= b0 || b1 <= a0) return false;
    }
  }
  return true;
}

function inside(poly, f) {
  return poly.every(([px, py]) => px >= 0 && px <= f.w && py >= 0 && py <= f.h);
}

/** Distance from a point to a convex polygon (0 inside). */
function distance([px, py], poly) {
  let inside = true;
  let best = Infinity;
  for (let i = 0; i < poly.length; i++) {
    const [x1, y1] = poly[i];
    const [x2, y2] = poly[(i + 1) % poly.length];
    const cross = (x2 - x1) * (py - y1) - (y2 - y1) * (px - x1);
    if (cross < 0) inside = false;
    const length2 = (x2 - x1) ** 2 + (y2 - y1) ** 2 || 1;
    const t = Math.max(0, Math.min(1, ((px - x1) * (x2 - x1) + (py - y1) * (y2 - y1)) / length2));
    best = Math.min(best, Math.hypot(px - (x1 + t * (x2 - x1)), py - (y1 + t * (y2 - y1))));
  }
  return inside ? 0 : best;
}

/** How much of the dots a box covers: per dot its weight × how deep the box reaches in (0–1). */
function dotsCovered(poly, dots) {
  let covered = 0;
  for (const [dx, dy, r, weight = 1] of dots) {
    const d = distance([dx, dy], poly);
    if (d < r) covered += weight * (d === 0 ? 1 : 1 - d / r);
  }
  return covered;
}

/**
 * Places labels, in the order given (the first matter most). A label:
 * {text, size, color, name, optional, background, candidates: [{c: [px, py] centre, angle,
 * text?, inline? (on its line, over a `background` box), arrow?: [px, py] (the point it
 * points at; an annotation with an arrow)}]}.
 * `dots`: [px, py, radius, weight?] to stay off where possible (the least weight covered). Returns the placed labels as
 * {label, candidate, poly}; an optional label with no free place is left out, another takes
 * its first candidate anyway.
 */
export function place(labels, f, dots = []) {
  const placed = [];
  for (const label of labels) {
    let best = null;
    for (const candidate of label.candidates) {
      const text = candidate.text ?? label.text;
      const poly = corners(candidate.c, textBox(text, label.size), candidate.angle || 0);
      if (!inside(poly, f)) continue;
      if (placed.some((p) => overlaps(p.poly, poly))) continue;
      // A label's box hides what is under it: worse than text over a dot.
      const covered = dotsCovered(poly, dots) * (candidate.inline ? 2 : 1);
      if (!best || covered < best.covered) best = {candidate, poly, covered};
      if (covered === 0) break;
    }
    if (!best && !label.optional && label.candidates.length) {
      const candidate = label.candidates[0];
      const text = candidate.text ?? label.text;
      const poly = corners(candidate.c, textBox(text, label.size), candidate.angle || 0);
      best = {candidate, poly};
    }
    if (best) placed.push({label, candidate: best.candidate, poly: best.poly});
  }
  return placed;
}

/** Plotly annotations (data coordinates, log axes) of placed labels. */
export function annotations(placed, f) {
  return placed.map(({label, candidate}) => {
    const text = candidate.text ?? label.text;
    const font = {size: label.size, color: label.color};
    if (candidate.arrow) {
      const [hx, hy] = f.data(...candidate.arrow);
      return {
        x: Math.log10(hx),
        y: Math.log10(hy),
        xref: 'x',
        yref: 'y',
        text,
        showarrow: true,
        arrowhead: 0,
        arrowwidth: 1,
        arrowcolor: label.arrowColor || label.color,
        ax: candidate.c[0] - candidate.arrow[0],
        ay: candidate.c[1] - candidate.arrow[1],
        font,
        name: label.name,
      };
    }
    const [x, y] = f.data(...candidate.c);
    return {
      x: Math.log10(x),
      y: Math.log10(y),
      xref: 'x',
      yref: 'y',
      text,
      showarrow: false,
      xanchor: 'center',
      yanchor: 'middle',
      textangle: -(candidate.angle || 0),
      font,
      bgcolor: candidate.inline ? label.background : undefined,
      borderpad: candidate.inline ? 1 : undefined,
      name: label.name,
    };
  });
}
