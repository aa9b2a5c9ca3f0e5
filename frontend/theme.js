// Light / dark theme. TensorBoard puts the class `dark-mode` on its own (parent) document's
// body and never styles plugin iframes, so we watch that body; outside TensorBoard (or if
// the parent is not reachable) we follow prefers-color-scheme.

const listeners = new Set();
let dark = false;

// Okabe–Ito, the colour-blind-safe palette (black swapped for a grey that reads on both themes).
export const PALETTE = [
  '#E69F00',
  '#56B4E9',
  '#009E73',
  '#0072B2',
  '#D55E00',
  '#CC79A7',
  '#F0E442',
  '#999999',
];

// Category colours: Okabe–Ito and two more, each theme its own shades of the same hues (the
// yellow darkened on white, the blue lightened on the dark background). Index i is the same
// hue in both.
const CATEGORY_LIGHT = [
  '#E69F00',
  '#56B4E9',
  '#009E73',
  '#0072B2',
  '#D55E00',
  '#CC79A7',
  '#C4AD00',
  '#8F8F8F',
  '#A6761D',
  '#7E57C2',
];
const CATEGORY_DARK = [
  '#E69F00',
  '#56B4E9',
  '#1DB388',
  '#3D8FD6',
  '#EE7733',
  '#DB92BA',
  '#F0E442',
  '#A8A8A8',
  '#C89A4B',
  '#A98BE0',
];

// One fixed colour and symbol per known category, in every view and run: [colour index,
// symbol]. Symbols say the kind: circles compute and memory ops, diamonds communication,
// squares copies and data movement, triangles control and host I/O. XLA's categories and
// the PyTorch ones (kineto/aten_cost.py); a run seldom has two of one colour and symbol.
const KNOWN_CATEGORIES = {
  'convolution fusion': [0, 'circle'],
  'loop fusion': [2, 'circle'],
  'output fusion': [3, 'circle'],
  'custom fusion': [4, 'circle'],
  'input fusion': [1, 'circle'],
  'custom-call': [5, 'circle'],
  'non-fusion elementwise': [6, 'circle'],
  fusion: [9, 'circle'],
  convolution: [8, 'circle'],
  dot: [0, 'circle'],
  reduce: [1, 'circle'],
  broadcast: [6, 'circle'],
  'data formatting': [7, 'circle'],
  'all-reduce': [5, 'diamond'],
  'all-gather': [1, 'diamond'],
  'reduce-scatter': [4, 'diamond'],
  'all-to-all': [2, 'diamond'],
  'collective-permute': [3, 'diamond'],
  send: [0, 'diamond'],
  recv: [6, 'diamond'],
  'communication (NCCL)': [5, 'diamond'],
  copy: [7, 'square'],
  'copy-start': [1, 'square'],
  'copy-done': [3, 'square'],
  'memory copy': [7, 'square'],
  'dynamic-update-slice': [0, 'square'],
  'dynamic-slice': [2, 'square'],
  gather: [4, 'square'],
  scatter: [8, 'square'],
  'allocation and view': [9, 'square'],
  while: [5, 'triangle-up'],
  conditional: [0, 'triangle-up'],
  infeed: [2, 'triangle-up'],
  outfeed: [4, 'triangle-up'],
  matmul: [0, 'circle'],
  attention: [4, 'circle'],
  elementwise: [2, 'circle'],
  reduction: [1, 'circle'],
  normalization: [3, 'circle'],
  embedding: [5, 'circle'],
  optimizer: [6, 'circle'],
  recurrent: [9, 'circle'],
  other: [7, 'circle'],
  annotation: [7, 'triangle-down'],
  'kernel without op': [7, 'x'],
  '': [7, 'circle'],
};
// Other categories: a colour and one of these symbols from a stable hash of the name.
const OTHER_SYMBOLS = ['hexagon', 'pentagon', 'triangle-down', 'cross'];

/** FNV-1a of a string: the same number in every browser and session. */
function stableHash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A category's {color, symbol} in a theme: fixed for known names, hashed for the others. */
export function categoryStyle(category, darkTheme = dark) {
  const name = String(category ?? '');
  const known = Object.prototype.hasOwnProperty.call(KNOWN_CATEGORIES, name)
    ? KNOWN_CATEGORIES[name]
    : null;
  const palette = darkTheme ? CATEGORY_DARK : CATEGORY_LIGHT;
  if (known) return {color: palette[known[0]], symbol: known[1]};
  const h = stableHash(name);
  return {
    color: palette[h % palette.length],
    symbol: OTHER_SYMBOLS[Math.floor(h / palette.length) % OTHER_SYMBOLS.length],
  };
}

const LIGHT = {
  dark: false,
  paper: '#ffffff',
  plot: '#ffffff',
  font: '#212121',
  muted: '#616161',
  grid: '#e6e6e6',
  roof: '#37474f',
  ceiling: '#455a64',
  memoryRegion: 'rgba(0, 114, 178, 0.07)',
  computeRegion: 'rgba(213, 94, 0, 0.07)',
  program: '#212121',
  aboveRoof: '#c62828',
  highlight: '#000000',
  a: '#0072B2',
  b: '#D55E00',
  arrow: 'rgba(33, 33, 33, 0.55)',
  hoverBg: '#ffffff',
  hoverBorder: '#9e9e9e',
};
const DARK = {
  dark: true,
  paper: '#1e1f22',
  plot: '#1e1f22',
  font: '#e8eaed',
  muted: '#a0a4aa',
  grid: '#3a3c40',
  roof: '#cfd8dc',
  ceiling: '#b0bec5',
  memoryRegion: 'rgba(86, 180, 233, 0.10)',
  computeRegion: 'rgba(230, 159, 0, 0.07)',
  program: '#ffffff',
  aboveRoof: '#ff6e6e',
  highlight: '#ffffff',
  a: '#56B4E9',
  b: '#E69F00',
  arrow: 'rgba(232, 234, 237, 0.6)',
  hoverBg: '#2a2b2e',
  hoverBorder: '#5f6368',
};

export function isDark() {
  return dark;
}

/** Chart colours of the current theme. */
export function colors() {
  return dark ? DARK : LIGHT;
}

/** Calls fn(isDark) on every change. */
export function onThemeChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function apply(value) {
  if (value === dark && document.documentElement.dataset.theme) return;
  dark = value;
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
  document.documentElement.classList.toggle('dark', dark);
  for (const fn of listeners) fn(dark);
}

function parentBody() {
  try {
    if (window.parent && window.parent !== window) return window.parent.document.body;
  } catch {
    // Cross-origin parent: fall back to the media query.
  }
  return null;
}

export function startTheme() {
  const media = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
  const body = parentBody();
  if (body) {
    const read = () => apply(body.classList.contains('dark-mode'));
    new MutationObserver(read).observe(body, {attributes: true, attributeFilter: ['class']});
    read();
  } else if (media) {
    media.addEventListener('change', () => apply(media.matches));
    apply(media.matches);
  } else {
    apply(false);
  }
}
