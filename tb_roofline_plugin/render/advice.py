""" "Where the time goes": the short answer the tab and ``summary`` put first.

The ops with the most wasted time (time x (1 - roofline efficiency)), one line each: what
bounds it, how far from its roof, what to try; then one line for the device time the
roofline cannot judge (communication, async copies, host transfers, ops without a cost
model; ``roofline.classes``). The text is made here once so every front end says the same.
"""

from __future__ import annotations

import numpy as np

from ..roofline.classes import BOUND_WORDS, CLASS_NAMES, CONTAINER, JUDGED

MIN_OPS, MAX_OPS = 3, 5  # ops named; past MIN_OPS only those worth a line
WORTH_A_LINE = 0.02  # of device time: wasted time past which a 4th or 5th op is named
NEAR_ROOF = 0.8  # roofline efficiency from which an op is "close to its roof"
LOW_PRECISION_WORTH = ("f32", "fp32", "tf32", "f64", "fp64", "c64", "c128")


def duration_text(us: float) -> str:
    """850 µs, 1.8 ms, 2.31 s: three significant digits in the unit that fits."""
    a = abs(us)
    value, unit = (us / 1e6, "s") if a >= 1e6 else (us / 1e3, "ms") if a >= 1e3 else (us, "µs")
    text = f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{'0' if text in ('-0', '0') else text} {unit}"


def percent_text(fraction: float) -> str:
    """42%, 3.5%, 0.35%, "< 0.01%", "> 1,000%": never an exponent, "-0" or absurd digits."""
    p = 100.0 * fraction
    if not np.isfinite(p) or p == 0:
        return "0%"
    if abs(p) < 0.01:
        return "< 0.01%"
    if abs(p) > 1000:
        return "> 1,000%"
    if abs(p) < 1:
        return f"{p:.2g}%"
    if abs(p) < 10:
        return f"{p:.1f}%".replace(".0%", "%")
    return f"{p:.0f}%"


def _sentence(text: str) -> str:
    return f"{text[:1].upper()}{text[1:]}."


def _what_to_try(bound: str, efficiency: float, dtype: str, memory: str) -> str:
    if bound == "Compute":
        if efficiency >= NEAR_ROOF:
            return "it is close to the compute roof: only fewer FLOPs help"
        if dtype in LOW_PRECISION_WORTH:
            return f"try bf16 inputs ({dtype} runs below the low-precision peak)"
        return (
            "try shapes that fill the matrix units (dimensions in multiples of 128, larger batches)"
        )
    if bound == memory:
        if efficiency >= NEAR_ROOF:
            return f"it is close to the {memory} roof: move fewer bytes (fuse it, a smaller dtype)"
        return (
            "try fusing it with its neighbours or moving fewer bytes (a smaller dtype, "
            "no materialised intermediates); far from the roof often means small or strided "
            "accesses"
        )
    return "try more on-chip data reuse (tiling)"


def advice_lines(
    names: list[str],
    module_ids: list[str],
    categories: list[str],
    bound_by: list[str],
    efficiency: np.ndarray,
    wasted_us: np.ndarray,
    wasted_rank: np.ndarray,
    self_time_us: np.ndarray,
    classes: list[str],
    dtypes: list[str],
    device_time_us: float,
    memory: str,
    peaks_known: bool,
) -> list[dict]:
    """The answer as ``{"kind", "text"}`` items (``op`` items name their op by
    ``hlo_module_id`` and ``hlo_name``); empty when there are no ops."""
    if not len(names):
        return []
    out: list[dict] = []
    if not peaks_known:
        out.append(
            {
                "kind": "peaks",
                "text": "The device's peaks are not known, so no op can be judged against a "
                "roof: the ops by time are in the table.",
            }
        )
    else:
        ranked = sorted(
            (int(r), i) for i, r in enumerate(wasted_rank.tolist()) if r > 0 and wasted_us[i] > 0
        )
        for n, (_, i) in enumerate(ranked[:MAX_OPS]):
            share = wasted_us[i] / device_time_us if device_time_us > 0 else 0.0
            if n >= MIN_OPS and share < WORTH_A_LINE:
                break
            bound = memory if bound_by[i] == "HBM" else bound_by[i]
            eff = float(efficiency[i])
            text = (
                f"{names[i]} ({categories[i] or 'uncategorized'}): {bound}-bound at "
                f"{percent_text(eff)} of its roof; up to {duration_text(float(wasted_us[i]))} "
                f"to gain ({percent_text(share)} of device time). "
                f"{_sentence(_what_to_try(bound, eff, dtypes[i], memory))}"
            )
            out.append(
                {"kind": "op", "hlo_module_id": module_ids[i], "hlo_name": names[i], "text": text}
            )
    unjudged = _unjudged_line(self_time_us, classes, device_time_us)
    if unjudged:
        out.append({"kind": "unjudged", "text": unjudged})
    return out


def _unjudged_line(self_time_us: np.ndarray, classes: list[str], device_time_us: float) -> str:
    """ "27% of device time is communication and async copies, not judged by the roofline:
    ..." (containers left out: their self time is loop overhead, their ops are judged)."""
    if device_time_us <= 0:
        return ""
    kinds = np.asarray(classes, object)
    parts = []
    for kind in CLASS_NAMES:
        if kind in (JUDGED, CONTAINER):
            continue
        share = float(self_time_us[kinds == kind].sum()) / device_time_us
        if share > 0:
            parts.append((share, kind))
    if not parts:
        return ""
    parts.sort(reverse=True)
    total = sum(s for s, _ in parts)
    what = [CLASS_NAMES[k] for _, k in parts]
    listed = what[0] if len(what) == 1 else f"{', '.join(what[:-1])} and {what[-1]}"
    details = "; ".join(f"{CLASS_NAMES[k]} {percent_text(s)} ({BOUND_WORDS[k]})" for s, k in parts)
    return (
        f"{percent_text(total)} of device time is {listed}, not judged by the roofline: {details}."
    )
