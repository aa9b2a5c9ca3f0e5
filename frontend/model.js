// Pure data shaping: records of a selection, op rows joined with `ops[]`, program points,
// roofs and ceilings, filters. No DOM, no Plotly.

import {gibToGb} from './format.js';
import {guidance} from './guidance.js';
import {opIdentity} from './op_detail.js';

export function opKey(moduleId, name) {
  return `${moduleId ?? ''}:${name ?? ''}`;
}

const RECORD_TYPE = {total: 'ALL', average: 'AVERAGE_STEP'};

/** The Program record and the op records (rank > 0) of one selection with the include flag. */
export function selectionRecords(data, step, include) {
  const wantedType = RECORD_TYPE[step] || 'PER_STEP';
  const records = ((data.database || {}).roofline_model_record || []).filter(
    (r) =>
      Boolean(r.include_infeed_outfeed) === include &&
      (r.record_type || 'ALL') === wantedType &&
      (wantedType !== 'PER_STEP' || String(r.step_num ?? 0) === String(step)),
  );
  const program =
    records.find((r) => r.hlo_name === 'Program' && Number(r.rank || 0) === 0) || null;
  const ops = records.filter((r) => Number(r.rank || 0) > 0);
  return {program, ops};
}

/**
 * FLOP/byte where a record sits on the chart: its intensity against the memory that bounds
 * it, or, with no bound (no peaks known, so no roofs), its operational intensity: FLOPs per
 * byte accessed.
 */
export function chartIntensity(record) {
  return (record && (record.bottleneck_operational_intensity || record.operational_intensity)) || 0;
}

/** True when a record can be placed on log–log axes. */
export function plottable(record) {
  return (record.measured_flop_rate || 0) > 0 && chartIntensity(record) > 0;
}

/** What the main memory is called: DRAM on a CPU, HBM on accelerators. */
export function mainMemory(device) {
  if (device && device.main_memory) return device.main_memory;
  return device && ['CPU', 'CPU_ONLY'].includes(device.hardware_type) ? 'DRAM' : 'HBM';
}

/** A record's bound_by in the tab's words: XProf's "HBM" is the main memory (DRAM on a CPU). */
export function boundByLabel(boundBy, memory) {
  if (!boundBy) return 'Unknown';
  return boundBy === 'HBM' ? memory : boundBy;
}

export const JUDGED = 'compute/memory'; // the roofline_class of the ops a roofline judges

/**
 * One table/chart row per op record, joined with the json's `ops[]` by module id + name;
 * `classWords` (the json's `roofline_classes`): what bounds an op the roofline cannot judge.
 */
export function opRows(records, details, device, classWords = {}) {
  const memory = mainMemory(device);
  const byKey = new Map((details || []).map((d) => [opKey(d.hlo_module_id, d.hlo_name), d]));
  return records.map((r) => {
    const key = opKey(r.hlo_module_id, r.hlo_name);
    const d = byKey.get(key) || {};
    const time = r.total_time_in_us || 0;
    const efficiency = r.roofline_efficiency || 0;
    const row = {
      key,
      name: r.hlo_name || '',
      category: r.hlo_category || '',
      program: String(r.hlo_module_id ?? ''),
      programName: d.program_name || '', // the module's name (jit_train_step), when known
      rank: Number(r.rank || 0),
      occurrences: Number(r.occurrences || 0),
      timeUs: time,
      selfTimeUs: r.total_self_time_in_us || 0,
      share: r.total_self_time_as_fraction || 0,
      flopRate: r.measured_flop_rate || 0,
      hbmGbps: gibToGb(r.hbm_bw || 0),
      memoryGbps: gibToGb(r.measured_memory_bw || 0),
      intensity: chartIntensity(r),
      boundBy: boundByLabel(r.bound_by, memory),
      memoryName: memory,
      efficiency,
      computeEfficiency: r.flop_rate_relative_to_hw_limit || 0,
      memoryEfficiency: r.memory_bw_relative_to_hw_limit || 0,
      dtype: d.dtype || '',
      ...opIdentity(d), // shapes, HLO line, framework op, source line
      dtypePeak: d.dtype_peak_gflops || (device && device.peak_flop_rate_gflops) || 0,
      dtypeComputeEfficiency: d.dtype_compute_efficiency ?? 0,
      dtypeEfficiency: d.dtype_roofline_efficiency ?? efficiency,
      dtypeNote: d.dtype_note || '', // "no bf16 ceiling measured: …": not judged on compute
      rooflineClass: d.roofline_class || JUDGED,
      classWords: classWords[d.roofline_class] || '',
      wastedUs: d.wasted_time_us ?? time * Math.max(1 - Math.min(efficiency, 1), 0),
      wastedRank: d.wasted_time_rank ?? 0,
      aboveRoof: d.above_roof ?? efficiency > 1.05,
      plottable: plottable(r),
      roofless: device ? device.peaks_known === false : false, // no peaks: no bound, efficiency or waste
      record: r,
    };
    row.programLabel = programLabel(row.programName, row.program);
    row.judged = row.rooflineClass === JUDGED;
    if (!row.judged) row.wastedUs = 0; // never "to gain": the roofline cannot judge it
    row.guidance = guidance(row);
    return row;
  });
}

/** A program by its module name, its id beside it: "jit_train_step (49)"; the id alone. */
export function programLabel(name, id) {
  if (!name) return String(id ?? '');
  return id === '' || id === undefined || id === null ? name : `${name} (${id})`;
}

/** Program points of the whole-profile json: Total, Average step, each step. */
const programPointsMemo = new WeakMap(); // total data -> {true|false: points}

/**
 * The Program points of a whole-profile answer (Total, Average step, each step), in step
 * order; one array per answer and infeed/outfeed choice, kept (a step switch reads it
 * again: tens of thousands of steps). Callers must not change it.
 */
export function programPoints(totalData, include) {
  let memo = programPointsMemo.get(totalData);
  if (!memo) programPointsMemo.set(totalData, (memo = {}));
  if (!memo[include]) memo[include] = collectProgramPoints(totalData, include);
  return memo[include];
}

function collectProgramPoints(totalData, include) {
  const points = [];
  for (const r of (totalData.database || {}).roofline_model_record || []) {
    if (r.hlo_name !== 'Program' || Number(r.rank || 0) !== 0) continue;
    if (Boolean(r.include_infeed_outfeed) !== include) continue;
    const type = r.record_type || 'ALL';
    if (type === 'ALL') points.push({label: 'Total', step: 'total', record: r});
    else if (type === 'AVERAGE_STEP')
      points.push({label: 'Average step', step: 'average', record: r});
    else if (type === 'PER_STEP')
      points.push({label: `Step ${r.step_num ?? 0}`, step: String(r.step_num ?? 0), record: r});
  }
  const order = (p) => (p.step === 'total' ? -2 : p.step === 'average' ? -1 : Number(p.step));
  return points.sort((a, b) => order(a) - order(b));
}

export const MAX_PROGRAM_STEPS = 300; // step points the program chart draws, at most about

const thinnedMemo = new WeakMap(); // points array -> its thinning, whatever step is selected

/**
 * The program points the chart draws. Up to `max` steps: all. Past it, the steps are cut into
 * about `max` runs of consecutive steps and each run is drawn as its median-time step (a real
 * step, its label saying which run it stands for), plus the slowest and the fastest step and
 * the selected one, so outliers and the choice stay visible. Total and Average always.
 * Returns {points, runLength} (runLength 1: every step drawn). The thinning of a `points`
 * array is kept: choosing another step only adds that step.
 */
export function chartProgramPoints(points, selectedStep, max = MAX_PROGRAM_STEPS) {
  let thinned = thinnedMemo.get(points);
  if (!thinned || thinned.max !== max) {
    thinned = thinning(points, max);
    thinnedMemo.set(points, thinned);
  }
  if (thinned.runLength === 1) return {points, runLength: 1};
  const selected = thinned.byStep.get(String(selectedStep));
  const shown = thinned.shown;
  if (!selected || thinned.kept.has(selected))
    return {points: [...shown], runLength: thinned.runLength};
  // The selected step in its place among the points (they are in step order).
  const at = thinned.position.get(selected);
  let lo = 0;
  let hi = shown.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (thinned.shownPosition[mid] < at) lo = mid + 1;
    else hi = mid;
  }
  const withSelected = [
    ...shown.slice(0, lo),
    {...selected, label: selected.label},
    ...shown.slice(lo),
  ];
  return {points: withSelected, runLength: thinned.runLength};
}

/** The step-independent part of `chartProgramPoints`: which points stand for the steps. */
function thinning(points, max) {
  const isStep = (p) => p.step !== 'total' && p.step !== 'average';
  const steps = points.filter(isStep);
  if (steps.length <= max) return {max, runLength: 1};
  const runLength = Math.ceil(steps.length / max);
  const time = (p) => p.record.total_time_in_us || 0;
  const byTime = (a, b) => time(a) - time(b) || Number(a.step) - Number(b.step);
  const kept = new Map(); // point -> label
  for (let i = 0; i < steps.length; i += runLength) {
    const run = steps.slice(i, i + runLength);
    const median = [...run].sort(byTime)[Math.floor((run.length - 1) / 2)];
    const span = `${run[0].step}–${run[run.length - 1].step}`;
    kept.set(median, `${median.label} (median of steps ${span})`);
  }
  const sorted = [...steps].sort(byTime);
  const extremes = [
    [sorted[sorted.length - 1], 'slowest step'],
    [sorted[0], 'fastest step'],
  ];
  for (const [p, what] of extremes) kept.set(p, `${p.label} (${what})`);
  const position = new Map(points.map((p, i) => [p, i]));
  const byStep = new Map();
  for (const p of steps) if (!byStep.has(p.step)) byStep.set(p.step, p); // the first, as find
  const shownPosition = [];
  const shown = [];
  points.forEach((p, i) => {
    if (isStep(p) && !kept.has(p)) return;
    shown.push(kept.has(p) ? {...p, label: kept.get(p)} : p);
    shownPosition.push(i);
  });
  return {max, runLength, kept, shown, shownPosition, position, byStep};
}

// Record field holding each memory's bandwidth (GiB/s); null: the profile has no byte counts.
const MEMORY_FIELD = {
  HBM: 'hbm_bw',
  DRAM: 'hbm_bw',
  'CMEM read': 'cmem_read_bw',
  'CMEM write': 'cmem_write_bw',
  'VMEM read': 'vmem_read_bw',
  'VMEM write': 'vmem_write_bw',
  'Shared memory / L1': null,
};

// Compute peaks this close (relative) are one ceiling: they print alike ("1.307 PFLOP/s"),
// e.g. an AMD profile's peak 1,307,443 GFLOP/s and its table's bf16 1,307,400.
const SAME_CEILING = 0.005;

/**
 * Roofs of a device, in GFLOP/s and GB/s (SI), so a roof y = x · GB/s meets the compute peak
 * exactly at the ridge point peak / GB/s. `records` tell which memories have byte counts.
 * Ceilings: one per distinct compute peak (peaks within SAME_CEILING merged, their dtypes
 * together), highest first; the one holding the main peak is drawn at the main peak.
 */
export function roofModel(device, records = []) {
  const peak = device.peak_flop_rate_gflops || 0;
  const values = Object.entries(device.dtype_peak_gflops || {})
    .filter(([, gflops]) => gflops > 0)
    .map(([dtype, gflops]) => ({dtype, gflops}));
  if (peak > 0) values.push({dtype: '', gflops: peak});
  values.sort((a, b) => b.gflops - a.gflops);
  const ceilings = [];
  for (const {dtype, gflops} of values) {
    const last = ceilings[ceilings.length - 1];
    if (last && last.low - gflops <= SAME_CEILING * last.low) {
      if (dtype) last.dtypes.push(dtype);
      last.low = gflops;
      last.main = last.main || (dtype === '' && gflops === peak);
      if (last.main) last.gflops = peak;
    } else {
      const main = dtype === '' && gflops === peak;
      ceilings.push({gflops, low: gflops, dtypes: dtype ? [dtype] : [], main});
    }
  }
  for (const ceiling of ceilings) delete ceiling.low;
  const memories = (device.memories || [])
    .filter((m) => m.peak_gbps > 0)
    .map((m) => {
      // The main memory goes by its kind (GDDR6, HBM3, ...); its bytes are hbm_bw.
      const name = m.name === mainMemory(device) ? 'HBM' : m.name;
      const field = Object.prototype.hasOwnProperty.call(MEMORY_FIELD, name)
        ? MEMORY_FIELD[name]
        : undefined;
      const counted =
        field === undefined ? true : field !== null && records.some((r) => (r[field] || 0) > 0);
      return {
        name: m.name,
        gbps: m.peak_gbps,
        ridge: m.ridge_point || (peak > 0 ? peak / m.peak_gbps : 0),
        noBytes: !counted,
      };
    });
  return {peak, ceilings, memories, none: !ceilings.length && !memories.length};
}

/**
 * A ceiling's name: "fp32 peak"; the main one "Peak compute", with its dtypes when a dtype's
 * peak is the same value: "Peak compute (bf16 / fp16)".
 */
export function ceilingLabel(ceiling) {
  const dtypes = ceiling.dtypes.join(' / ');
  if (ceiling.main) return dtypes ? `Peak compute (${dtypes})` : 'Peak compute';
  return `${dtypes} peak`;
}

/** A ceiling's label on the chart: "bf16 / fp8 459 TFLOP/s", "peak 1.307 PFLOP/s". */
export function ceilingShortLabel(ceiling, rate) {
  return `${ceiling.dtypes.join(' / ') || 'peak'} ${rate}`;
}

/** Distinct values of a row field, most time first. */
export function distinct(rows, field) {
  const time = new Map();
  for (const row of rows) time.set(row[field], (time.get(row[field]) || 0) + row.selfTimeUs);
  return [...time.entries()].sort((a, b) => b[1] - a[1]).map(([value]) => value);
}

/**
 * Applies the filters. Returns {rows, error}: an invalid regular expression is a message
 * (the name filter is then ignored), never an exception.
 */
export function applyFilters(rows, filters) {
  let error = '';
  let pattern = null;
  if (filters.regex) {
    try {
      pattern = new RegExp(filters.regex, 'i');
    } catch (err) {
      error = `The op-name filter is not a valid regular expression: ${err.message}`;
    }
  }
  const minShare = Number(filters.minShare) || 0;
  let kept = rows.filter(
    (row) =>
      (!filters.category || row.category === filters.category) &&
      (!filters.boundBy || row.boundBy === filters.boundBy) &&
      (!filters.program || row.program === filters.program) &&
      (!pattern || pattern.test(row.name)) &&
      100 * row.share >= minShare,
  );
  const topN = Math.floor(Number(filters.topN) || 0);
  if (topN > 0) kept = [...kept].sort((a, b) => b.selfTimeUs - a.selfTimeUs).slice(0, topN);
  return {rows: kept, error};
}
