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
export const SYMBOLS = ['circle', 'square', 'diamond', 'triangle-up', 'triangle-down', 'pentagon'];

const LIGHT = {
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
