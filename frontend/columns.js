// Column definitions of the op table and the compare delta table: how each column sorts
// (value), shows (text) and exports (csv, default: value).

import {el} from './dom.js';
import {identityLine} from './op_detail.js';
import {duration, flopUnit, micros, num, pct, signed} from './format.js';

const n = (key, label, value, text, extra = {}) => ({
  key,
  label,
  value,
  text,
  numeric: true,
  ...extra,
});
const s = (key, label, value, extra = {}) => ({key, label, value, text: value, ...extra});

/**
 * The op table's columns; `memory` names the main memory (HBM, or DRAM on a CPU), `rate`
 * the view's FLOP/s unit (format.flopUnit: the chart's). Times are scaled to their unit per
 * cell (850 µs, 1.8 ms, 77.8 s) and sort by value; CSV keeps µs and GFLOP/s.
 */
export function opColumns(memory = 'HBM', rate = flopUnit(0)) {
  return [
    n(
      'rank',
      'Rank',
      (r) => r.rank,
      (r) => String(r.rank),
      {title: 'Rank by self time (1 = most time)'},
    ),
    s('operation', 'Operation', (r) => r.name, {
      wrap: true,
      expander: true, // the ▸ that opens the row's detail (op_detail.js)
      sticky: true,
      render: (r) => [
        el('span', {class: 'op-name', text: r.name}),
        identityLine(r),
        el('span', {class: 'guidance', text: r.guidance}),
      ],
      exports: [
        ['operation', 'Operation', (r) => r.name],
        ['guidance', 'Guidance', (r) => r.guidance],
      ],
      title:
        'Sort by op name; below each name, its shapes and framework op, then one line of guidance; ▸ opens its details',
    }),
    s('category', 'Category', (r) => r.category),
    n(
      'self_time_us',
      'Self time',
      (r) => r.selfTimeUs,
      (r) => duration(r.selfTimeUs),
      {exports: [['self_time_us', 'Self time (µs)', (r) => r.selfTimeUs]]},
    ),
    n(
      'time_share',
      'Share',
      (r) => r.share,
      (r) => pct(r.share),
      {title: "Self time as a share of the selection's time"},
    ),
    n(
      'wasted_us',
      'Wasted',
      (r) => r.wastedUs,
      (r) => (r.roofless || r.judged === false ? '—' : duration(r.wastedUs)),
      {
        title:
          'Time × (1 − roofline efficiency): what a perfect op would save (— : not judged by the roofline)',
        exports: [['wasted_us', 'Wasted (µs)', (r) => r.wastedUs]],
      },
    ),
    n(
      'wasted_rank',
      'Wasted rank',
      (r) => r.wastedRank,
      (r) => (r.wastedRank && !r.roofless ? String(r.wastedRank) : ''),
      {title: '1 = most wasted time'},
    ),
    s('bound_by', 'Bound by', (r) => r.boundBy),
    n(
      'efficiency',
      'Roofline eff.',
      (r) => r.efficiency,
      (r) => (r.roofless ? '—' : pct(r.efficiency)),
      {title: 'Share of the attainable roof reached (largest utilization)'},
    ),
    n(
      'gflops',
      rate.unit,
      (r) => r.flopRate,
      (r) => num(r.flopRate / rate.scale),
      {exports: [['gflops', 'GFLOP/s', (r) => r.flopRate]]},
    ),
    n(
      'intensity',
      'FLOP/byte',
      (r) => r.intensity,
      (r) => num(r.intensity),
      {
        title:
          'Operational intensity against the bounding memory (without peaks: FLOPs per byte accessed)',
      },
    ),
    n(
      'hbm_gbps',
      `${memory} GB/s`,
      (r) => r.hbmGbps,
      (r) => num(r.hbmGbps),
      {title: `${memory} bandwidth in GB/s (10⁹ bytes/s)`},
    ),
    s('dtype', 'dtype', (r) => r.dtype || '—', {csv: (r) => r.dtype}),
    s('program', 'Program', (r) => r.programLabel || r.program, {
      cellClass: 'muted small',
      title: 'HLO module (program): its name, its id beside it',
      exports: [
        ['program', 'Program', (r) => r.program],
        ['program_name', 'Program name', (r) => r.programName || ''],
      ],
    }),
  ];
}

export const OP_COLUMNS = opColumns();

const fixed2 = (v) => v.toFixed(2);
const pair = (a, b, f) => `${f(a)} → ${f(b)}`;
// Paired columns export as separate A, B (and Δ) columns: [key, label, value(row)].
const both = (field, label, delta = true) => [
  [`${field}_a`, `${label} A`, (r) => r[`${field}_a`] ?? ''],
  [`${field}_b`, `${label} B`, (r) => r[`${field}_b`] ?? ''],
  ...(delta ? [[`${field}_delta`, `Δ ${label}`, (r) => r[`${field}_delta`] ?? '']] : []),
];

export const COMPARE_COLUMNS = [
  s('operation', 'Operation', (r) => r.operation, {cellClass: 'name', sticky: true}),
  s('category', 'Category', (r) => r.category),
  s('only_in', 'Only in', (r) => r.only_in || '', {
    title: 'A or B when the op ran on one side only',
  }),
  n(
    'time_us_a',
    'Time A (µs)',
    (r) => r.time_us_a,
    (r) => micros(r.time_us_a),
  ),
  n(
    'time_us_b',
    'Time B (µs)',
    (r) => r.time_us_b,
    (r) => micros(r.time_us_b),
  ),
  n(
    'time_us_delta',
    'Δ time (µs)',
    (r) => r.time_us_delta,
    (r) => signed(r.time_us_delta, micros),
    {title: 'B − A'},
  ),
  n(
    'abs_delta',
    '|Δ time|',
    (r) => Math.abs(r.time_us_delta || 0),
    (r) => micros(Math.abs(r.time_us_delta || 0)),
    {title: 'Sorted by this by default'},
  ),
  n(
    'time_us_delta_pct',
    'Δ time %',
    (r) => r.time_us_delta_pct ?? 0,
    (r) => (r.only_in ? '' : `${signed(r.time_us_delta_pct, fixed2)}%`),
  ),
  n(
    'flop_rate',
    'GFLOP/s A → B',
    (r) => r.flop_rate_delta || 0,
    (r) => pair(r.flop_rate_a, r.flop_rate_b, num),
    {exports: both('flop_rate', 'GFLOP/s')},
  ),
  n(
    'efficiency',
    'Efficiency A → B',
    (r) => r.efficiency_delta || 0,
    (r) => pair(r.efficiency_a, r.efficiency_b, pct),
    {exports: both('efficiency', 'Efficiency')},
  ),
  s('bound_by', 'Bound by A → B', (r) => pair(r.bound_by_a || '—', r.bound_by_b || '—', String), {
    exports: both('bound_by', 'Bound by', false),
  }),
  n(
    'wasted',
    'Wasted A → B (µs)',
    (r) => (r.wasted_us_b || 0) - (r.wasted_us_a || 0),
    (r) => pair(r.wasted_us_a, r.wasted_us_b, micros),
    {exports: both('wasted_us', 'Wasted (µs)', false)},
  ),
  s('program', 'Program', (r) => r.program, {
    cellClass: 'muted small',
    title: 'HLO module (program) id',
  }),
];
