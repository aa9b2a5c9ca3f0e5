// One line of plain-words guidance per op, from its roofline numbers.

import {duration, pct} from './format.js';

const GAIN_WORTH_SAYING = 0.05; // µs: below this "up to … to gain" is noise

function gain(row) {
  return row.wastedUs > GAIN_WORTH_SAYING ? `; up to ${duration(row.wastedUs)} to gain` : '';
}

export function guidance(row) {
  if (row.judged === false) {
    const what = row.classWords || row.rooflineClass;
    return `${what.charAt(0).toUpperCase()}${what.slice(1)}; not judged by the roofline`;
  }
  if (row.dtypeNote && !row.aboveRoof) {
    return `${row.dtypeNote} (${row.memoryName} at ${pct(row.memoryEfficiency, 0)} of its peak)`;
  }
  if (row.aboveRoof) {
    return (
      `Above the ${row.boundBy} roof (${pct(row.efficiency, 0)}): likely an async copy, ` +
      'a wrong peak or an inexact cost model, not real speed'
    );
  }
  if (row.flopRate <= 0) {
    if (row.memoryEfficiency > 0) {
      return `No FLOPs: data movement only (${row.boundBy} at ${pct(row.memoryEfficiency, 0)} of its peak)${gain(row)}`;
    }
    return 'No FLOPs and no bytes recorded: only its time is known';
  }
  if (row.intensity <= 0) {
    return 'FLOPs but no byte counts: its intensity is unknown, so it is not on the chart';
  }
  if (row.boundBy === 'Compute') {
    const peakName = row.dtype ? `${row.dtype} peak` : 'compute peak';
    const eff = row.dtype ? row.dtypeComputeEfficiency : row.computeEfficiency;
    const near = eff >= 0.8 ? ' (close to the roof)' : '';
    return `Compute-bound at ${pct(eff, 0)} of the ${peakName}${near}${gain(row)}`;
  }
  if (row.boundBy === 'Unknown') return 'Bound unknown: the device peaks are not known';
  const near = row.efficiency >= 0.8 ? ' (close to the roof)' : '';
  return `${row.boundBy}-bound at ${pct(row.efficiency, 0)} of the roof${near}${gain(row)}`;
}
