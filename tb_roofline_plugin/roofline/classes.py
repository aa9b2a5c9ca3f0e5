"""Which ops the roofline can judge: the one home of that verdict.

A roofline judges an op by its FLOPs and bytes against the device's compute and memory
peaks. Some ops are bound by something else, and their "efficiency" says nothing:
collectives wait on the interconnect, async copies (and host offload) overlap compute and
their time is mostly waiting, infeed/outfeed wait on the host, control-flow containers
(while, call, ...) hold other ops whose time is theirs, and an op without a cost model (no
FLOPs and no bytes) has only its time. Those are kept out of the wasted-time ranking and of
the "to gain" figures, and shown apart with what bounds them.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from ..kineto.aten_cost import COMMUNICATION as KINETO_COMMUNICATION
from ..ops.op_metrics import INNER_OP_CATEGORIES
from .formulas import is_infeed_or_outfeed

JUDGED = "compute/memory"
COMMUNICATION = "communication"
ASYNC_COPY = "async copy"
HOST_TRANSFER = "host transfer"
CONTAINER = "container"
NO_COST_MODEL = "no cost model"
CLASSES = (JUDGED, COMMUNICATION, ASYNC_COPY, HOST_TRANSFER, CONTAINER, NO_COST_MODEL)

# What bounds an op of each unjudged class, in words (the tab and the CLI say these).
BOUND_WORDS = {
    COMMUNICATION: "bound by the interconnect",
    ASYNC_COPY: "overlaps compute; its time is mostly waiting",
    HOST_TRANSFER: "waits on the host's input/output pipeline",
    CONTAINER: "holds other ops: its time is theirs, judged op by op",
    NO_COST_MODEL: "no cost model: only its time is known",
}

# Each class as a sentence names its ops (in this order).
CLASS_NAMES = {
    JUDGED: "compute and memory ops",
    COMMUNICATION: "communication",
    ASYNC_COPY: "async copies",
    HOST_TRANSFER: "infeed/outfeed",
    CONTAINER: "control flow (while, call, ...)",
    NO_COST_MODEL: "ops without a cost model",
}

# XLA collectives and point-to-point ops, with their async -start/-done halves and the
# numeric suffix of an instruction name (all-reduce.7, all-gather-start.2, recv-done).
_XLA_COLLECTIVE = re.compile(
    r"^(all-reduce|all-gather|reduce-scatter|collective-permute|collective-broadcast|"
    r"all-to-all|ragged-all-to-all|send|recv)(-start|-done)?(\.\d+)?$"
)
# The same words inside a category or a fusion's name (XProf: "all-reduce fusion",
# "async collective done"), and NCCL/RCCL/PyTorch distributed names.
_COLLECTIVE_WORDS = re.compile(
    r"all-reduce|all-gather|reduce-scatter|collective|all-to-all|"
    r"^(nccl|rccl)|nccl(dev)?kernel|record_param_comms|^c10d::",
    re.IGNORECASE,
)
_ASYNC_COPY = re.compile(r"^copy-(start|done)(\.\d+)?$|memcpy|memset", re.IGNORECASE)


@functools.lru_cache(maxsize=1 << 16)
def op_class(name: str, category: str) -> str:
    """The class of one op by its name and category alone (never NO_COST_MODEL: that one
    needs its costs, see ``roofline_classes``); remembered, as every step of a profile asks
    again for the same ops (three regular expressions each)."""
    if category == KINETO_COMMUNICATION or _XLA_COLLECTIVE.match(name):
        return COMMUNICATION
    if _COLLECTIVE_WORDS.search(category) or _COLLECTIVE_WORDS.search(name):
        return COMMUNICATION
    if _ASYNC_COPY.search(name) or category in ("copy-start", "copy-done"):
        return ASYNC_COPY
    if is_infeed_or_outfeed(category) or is_infeed_or_outfeed(name.split(".")[0]):
        return HOST_TRANSFER
    if category in INNER_OP_CATEGORIES:
        return CONTAINER
    return JUDGED


def roofline_classes(
    names: np.ndarray | list,
    categories: np.ndarray | list,
    flop_rates: np.ndarray,
    memory_rates: np.ndarray,
) -> np.ndarray:
    """Each op's class (an object array of CLASSES): by name and category, tested once per
    distinct pair; an op left judgeable without FLOPs and bytes has no cost model."""
    pairs = list(zip(list(names), list(categories)))
    verdict = {pair: op_class(*pair) for pair in set(pairs)}
    classes = np.array([verdict[p] for p in pairs] or [], object)
    costless = (np.asarray(flop_rates) <= 0) & (np.asarray(memory_rates) <= 0)
    classes[(classes == JUDGED) & costless] = NO_COST_MODEL
    return classes
