"""The compiled HLO modules of a profile (``/host:metadata``), by program id."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from google.protobuf.message import DecodeError

from ..xspace.profile_reader import (
    METADATA_PLANE,
    UINT64_MASK,
    Profile,
    as_uint64,
    stat_names,
    stats_dict,
)

if TYPE_CHECKING:  # the HLO schema and the cost model only for profiles costed from HLO
    from .cost.engine import ModuleCosts

HLO_PROTO_STAT = "Hlo Proto"


def program_modules(profile: Profile) -> tuple[dict[int, ModuleCosts], list[str]]:
    """{program id: costed module} and a note per module that could not be read.

    The program id is the ``program_id`` stat, else the event-metadata id masked to
    uint64 (TPU profiles store it only as the id).
    """
    from ..protos import hlo_pb2
    from .cost.engine import ModuleCosts

    plane = profile.plane(METADATA_PLANE)
    if plane is None:
        return {}, []
    names = stat_names(plane)
    modules: dict[int, ModuleCosts] = {}
    problems: list[str] = []
    for key, meta in plane.event_metadata.items():
        stats = stats_dict(meta.stats, names)
        raw = stats.get(HLO_PROTO_STAT)
        if not isinstance(raw, bytes):
            continue
        program_id = as_uint64(stats.get("program_id"), default=as_uint64(key))
        try:
            proto = hlo_pb2.HloProto.FromString(raw)
        except DecodeError as exc:
            problems.append(
                f"HLO module {meta.name!r} could not be decoded ({exc}); its ops are uncosted"
            )
            continue
        modules[program_id] = ModuleCosts(proto.hlo_module)
    return modules, problems


_PROGRAM_NAME = re.compile(r"^(.+)\((\d+)\)$")


def program_names(profile: Profile) -> dict[int, str]:
    """{program id: module name} from ``/host:metadata`` names like ``jit_train_step(12)``.

    Program ids differ between runs (recompilation, another process); module names do
    not, so comparisons align ops by module name.
    """
    plane = profile.plane(METADATA_PLANE)
    names: dict[int, str] = {}
    if plane is None:
        return names
    for meta in plane.event_metadata.values():
        match = _PROGRAM_NAME.match(meta.name)
        if match:
            names[int(match.group(2)) & UINT64_MASK] = match.group(1)
    return names
