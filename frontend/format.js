// Number, time and text formatting, and escaping for the two places that parse markup:
// Plotly's hover/legend/annotation text and CSV cells.

export const GIB_PER_GB = 1.073741824; // bytes in a GiB / bytes in a GB

const significant = new Intl.NumberFormat('en-US', {maximumSignificantDigits: 4});
const fixed1 = new Intl.NumberFormat('en-US', {minimumFractionDigits: 1, maximumFractionDigits: 1});

/** A number with 4 significant digits and thousands separators; '' for missing values. */
export function num(value) {
  if (typeof value !== 'number' || !Number.isFinite(value))
    return value === undefined ? '' : String(value ?? '');
  if (value === 0) return '0';
  if (Math.abs(value) < 1e-3 || Math.abs(value) >= 1e15) return value.toExponential(3);
  return significant.format(value);
}

/** Microseconds as a table cell: one decimal, thousands separators. */
export function micros(value) {
  return typeof value === 'number' && Number.isFinite(value) ? fixed1.format(value) : '';
}

/** A duration in plain words: 850 µs, 1.8 ms, 2.31 s. */
export function duration(us) {
  if (typeof us !== 'number' || !Number.isFinite(us)) return '';
  const a = Math.abs(us);
  if (a >= 1e6) return `${num(us / 1e6)} s`;
  if (a >= 1e3) return `${num(us / 1e3)} ms`;
  return `${num(us)} µs`;
}

/**
 * A fraction (0.42) as a percentage (42.0%): never an exponent, "−0.0" or absurd digits.
 * Below 0.01% "< 0.01%", past 1,000% "> 1,000%", below 0.1% two significant digits.
 */
export function pct(fraction, digits = 1) {
  if (typeof fraction !== 'number' || !Number.isFinite(fraction)) return '';
  const p = 100 * fraction;
  const a = Math.abs(p);
  if (a === 0) return `${(0).toFixed(digits)}%`;
  if (a < 0.01) return '< 0.01%';
  if (a > 1000) return p > 0 ? '> 1,000%' : '< \u22121,000%';
  const text = a < 0.1 ? a.toPrecision(2) : a.toFixed(digits);
  if (Number(text) === 0) return `${text}%`;
  return `${p < 0 ? '\u2212' : ''}${text}%`;
}

/** A count and its noun, singular or plural: "1 CPU core", "8 TensorCores". */
export function counted(count, singular, plural = `${singular}s`) {
  return `${num(count)} ${count === 1 ? singular : plural}`;
}

/**
 * The FLOP/s unit of a view, from its largest rate (GFLOP/s): TFLOP/s when it reaches
 * 1 TFLOP/s, so a table and its chart say the same. Returns {scale, unit}: value / scale.
 */
export function flopUnit(maxGflops) {
  const m = Math.abs(maxGflops || 0);
  if (m >= 1e6) return {scale: 1e6, unit: 'PFLOP/s'};
  if (m >= 1e3) return {scale: 1e3, unit: 'TFLOP/s'};
  if (m >= 1 || m === 0) return {scale: 1, unit: 'GFLOP/s'};
  return {scale: 1e-3, unit: 'MFLOP/s'};
}

/** A signed change: +1.2, −3.4 (a real minus sign). */
export function signed(value, formatter = num) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return '';
  const text = formatter(Math.abs(value));
  if (!/[1-9]/.test(text)) return text; // rounds to zero: no sign ("−0.0")
  if (value > 0) return `+${text}`;
  if (value < 0) return `\u2212${text}`;
  return text;
}

/** FLOP/s given in GFLOP/s, with an SI prefix: 459 TFLOP/s. */
export function flopRate(gflops) {
  if (typeof gflops !== 'number' || !Number.isFinite(gflops)) return '';
  const units = [
    [1e6, 'PFLOP/s'],
    [1e3, 'TFLOP/s'],
    [1, 'GFLOP/s'],
    [1e-3, 'MFLOP/s'],
    [1e-6, 'kFLOP/s'],
  ];
  for (const [scale, unit] of units) {
    if (Math.abs(gflops) >= scale) return `${num(gflops / scale)} ${unit}`;
  }
  return gflops === 0 ? '0 FLOP/s' : `${num(gflops * 1e9)} FLOP/s`;
}

/** Bytes/s given in GB/s (SI), with an SI prefix: 2.77 TB/s. */
export function byteRate(gbps) {
  if (typeof gbps !== 'number' || !Number.isFinite(gbps)) return '';
  if (Math.abs(gbps) >= 1e3) return `${num(gbps / 1e3)} TB/s`;
  if (Math.abs(gbps) >= 1 || gbps === 0) return `${num(gbps)} GB/s`;
  return `${num(gbps * 1e3)} MB/s`;
}

/** GiB/s (the unit of the records) to GB/s (the unit of the chart and of the device peaks). */
export function gibToGb(gibps) {
  return typeof gibps === 'number' ? gibps * GIB_PER_GB : 0;
}

// Characters a profile string may not use to change what is around it: controls (but the
// line breaks and tabs of our own messages) and the bidi embeddings, overrides and isolates
// (a U+202E in a host name would mirror the rest of the header). The terminal's rule is
// wording.terminal_safe on the server.
const INVISIBLE =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Profile text with its controls and bidi formatting characters shown as \x1b, \u202e. */
export function visibleText(text) {
  return String(text ?? '').replace(INVISIBLE, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

const HTML_ESCAPES = {'&': '&#38;', '<': '&#60;', '>': '&#62;', '"': '&#34;', "'": '&#39;'};

/**
 * Escapes text for Plotly, which renders a subset of HTML in hover text, legend names and
 * annotations. Numeric entities only: Plotly decodes those back to the characters, as text.
 */
export function escapeHtml(text) {
  return visibleText(text).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

/**
 * One CSV cell: always quoted; text that a spreadsheet would run as a formula
 * (= + - @ at the start) gets a leading apostrophe.
 */
export function csvCell(value) {
  if (typeof value === 'number') return Number.isFinite(value) ? `"${value}"` : '""';
  let text = String(value ?? '');
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return `"${text.replace(/"/g, '""')}"`;
}

/** A file-name-safe version of a run / host / step label. */
export function safeFileName(text) {
  return (
    String(text)
      .replace(/[^A-Za-z0-9_.-]+/g, '_')
      .replace(/^_+|_+$/g, '') || 'roofline'
  );
}

const LONG_LIST = 8; // a run of more numbers than this in a message is summarised
const NAMED_AT_MOST = 5; // longer lists are a count and a range (as wording.py on the server)

/** Step numbers for a sentence, never unbounded: "Step 3", "Steps 0, 4 and 7", "1,498 steps, 0–1,497". */
export function stepsPhrase(numbers) {
  const list = [...numbers].map(Number).sort((a, b) => a - b);
  if (list.length === 1) return `Step ${list[0]}`;
  if (list.length <= NAMED_AT_MOST)
    return `Steps ${list.slice(0, -1).join(', ')} and ${list[list.length - 1]}`;
  return `${num(list.length)} steps, ${num(list[0])}–${num(list[list.length - 1])}`;
}

/** Names for a sentence, never unbounded: "a, b and c", or "a, b, c, d, e and 1,493 more". */
export function namesPhrase(names) {
  const list = [...names];
  if (list.length <= 1) return list.join('');
  if (list.length <= NAMED_AT_MOST)
    return `${list.slice(0, -1).join(', ')} and ${list[list.length - 1]}`;
  return `${list.slice(0, NAMED_AT_MOST).join(', ')} and ${num(list.length - NAMED_AT_MOST)} more`;
}

const NUMBER_RUN = new RegExp(`-?\\d+(?:\\.\\d+)?(?:, -?\\d+(?:\\.\\d+)?){${LONG_LIST},}`, 'g');
export const MAX_MESSAGE_CHARS = 400;

/**
 * A server message kept readable: long runs of numbers become "0, 1, …, 1497 (1,498 in all)",
 * and what is still too long is cut with a count of what was left out.
 */
export function readableMessage(text, maxChars = MAX_MESSAGE_CHARS) {
  let out = String(text ?? '').replace(NUMBER_RUN, (run) => {
    const items = run.split(', ');
    return `${items[0]}, ${items[1]}, …, ${items[items.length - 1]} (${num(items.length)} in all)`;
  });
  if (out.length > maxChars)
    out = `${out.slice(0, maxChars).trimEnd()}… (${num(out.length - maxChars)} more characters)`;
  return out;
}
