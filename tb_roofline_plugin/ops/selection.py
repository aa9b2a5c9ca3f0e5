"""Choosing what to look at: the whole profile, the average complete step, or one step.

A selection resolves to one OpMetricsDb and the record type it is reported as; the
average step divides every additive column of the complete steps' sum by their count,
so its op records are per-step values (XProf divides only the Program's total times).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import NotFound, RooflineError
from ..protos import roofline_model_pb2
from ..wording import numbered
from .op_metrics import OpMetricsDb
from .op_stats import OpStats, sum_steps

TOTAL = "total"
AVERAGE = "average"
_LISTED_AT_MOST = 12  # a "no such step" message lists the steps up to this many

_DIVIDED = (
    "time_ps",
    "self_time_ps",
    "flops",
    "model_flops",
    "bytes_accessed",
    "breakdown",
    "dma_stall_ps",
    "normalized_time_ps",
)


class BadStep(RooflineError):
    """A step value that is neither total, average nor a step number."""


ALL_DEVICES = "all"


class BadDevice(RooflineError):
    """A device value that is not ``all`` or the number of one of the host's devices."""

    status = 400


def parse_device(value: str | None) -> int | None:
    """``all`` (default: None) or a device number (XLA:CPU ``device_ordinal``, the N of
    ``/device:GPU:N`` or ``/device:TPU:N``)."""
    text = (value or ALL_DEVICES).strip().lower()
    if text == ALL_DEVICES:
        return None
    if text.isascii() and text.isdigit():
        return int(text)
    raise BadDevice(f"device must be 'all' or a device number, not {value!r}")


def check_device(device: int | None, devices: list[int]) -> None:
    """BadDevice naming ``device`` unless it is None (all) or one of ``devices`` (those
    of one host that ran ops)."""
    if device is None or device in devices:
        return
    if not devices:
        raise BadDevice(
            f"no device {device} to show: one device is shown for one host of an XSpace "
            "profile whose devices ran XLA ops"
        )
    if len(devices) <= _LISTED_AT_MOST:
        known = f"devices: {', '.join(map(str, devices))}"
    else:
        known = numbered(devices, "device")
    raise BadDevice(f"no device {device} on this host ({known})")


@dataclass
class Selection:
    label: str  # "total", "average" or the step number as text
    db: OpMetricsDb
    record_type: int
    step_num: int = 0
    averaged_steps: int = 0  # complete steps the db is the mean of (0: not an average)


def parse_step(value: str | None) -> str | int:
    """``total`` (default), ``average`` or a step number."""
    text = (value or TOTAL).strip().lower()
    if text in (TOTAL, AVERAGE):
        return text
    if text.isascii() and text.isdigit():
        return int(text)
    raise BadStep(f"step must be 'total', 'average' or a step number, not {value!r}")


def average_db(stats: OpStats) -> OpMetricsDb:
    steps = stats.complete_steps
    if not steps:
        raise NotFound("no complete steps to average (the profile has no step markers)")
    total = sum_steps(steps)
    n = len(steps)
    cols = {k: getattr(total, k) / n for k in _DIVIDED}
    cols["time_ps"] = np.rint(cols["time_ps"]).astype(np.int64)
    cols["self_time_ps"] = np.rint(cols["self_time_ps"]).astype(np.int64)
    cols["occurrences"] = np.rint(total.occurrences / n).astype(np.int64)
    return replace(total, **cols, total_time_ps=int(round(total.total_time_ps / n)))


def select(stats: OpStats, step: str | int) -> Selection:
    if step == TOTAL:
        return Selection(TOTAL, stats.all_db, roofline_model_pb2.ALL)
    if step == AVERAGE:
        return Selection(
            AVERAGE,
            average_db(stats),
            roofline_model_pb2.AVERAGE_STEP,
            averaged_steps=len(stats.complete_steps),
        )
    for info in stats.steps:
        if info.step_num == step:
            return Selection(str(step), info.db, roofline_model_pb2.PER_STEP, step_num=step)
    numbers = [s.step_num for s in stats.steps]
    if len(numbers) <= _LISTED_AT_MOST:
        known = f"steps: {', '.join(map(str, numbers)) or 'none'}"
    else:  # never a wall of numbers
        known = numbered(numbers, "step")
    raise NotFound(f"no step {step} in this profile ({known})")


def per_step_selection(stats: OpStats, step: str | int) -> Selection:
    """What Compare compares for a step choice: a step, the Average step, or for Total its
    Average step (the mean complete step), so that Compare's "per step" is the figure the
    Average step shows; Total without complete steps stays the whole profile."""
    if step == TOTAL and stats.complete_steps:
        return replace(select(stats, AVERAGE), label=TOTAL)
    return select(stats, step)


def layer_selection(stats: OpStats, step: str | int) -> Selection:
    """``select`` of the rows the layer tree is made of: the op rows, or a PyTorch trace's
    rows split by module (``OpStats.layer_split``)."""
    split = stats.layer_split
    if split is None:
        return select(stats, step)
    return select(replace(stats, all_db=split.all_db, steps=split.steps, layer_split=None), step)
