"""From a decoded profile to OpStats: picks the platform and reads its ops and steps."""

from __future__ import annotations

import os

from .op_metrics import empty_db
from .op_stats import Diagnostics, OpStats, combine_hosts
from .perf_env import PerfEnv, RunEnvironment
from .profile_reader import GPU_PLANE, TPU_CORE_PLANE, Profile, read_profile
from .tpu import tpu_op_stats

PROFILE_SUFFIX = ".xplane.pb"

NO_DEVICE_PLANES = (
    "This profile has no TPU or GPU device planes (planes: {planes}). CPU rooflines need "
    "the HLO cost model and are not computed by this version; the result is empty."
)
GPU_NOT_YET = (
    "This is a GPU profile ({count} GPU planes). GPU rooflines need the HLO cost model and "
    "are not computed by this version; the result is empty."
)


def host_name(path: str | os.PathLike) -> str:
    """``.../<host>.xplane.pb`` -> ``<host>`` (the host is named by its file, as XProf does)."""
    name = os.path.basename(os.fspath(path))
    return name[: -len(PROFILE_SUFFIX)] if name.endswith(PROFILE_SUFFIX) else name


def analyze_profile(profile: Profile, host: str) -> OpStats:
    """OpStats of one host; without device planes an empty result that says why."""
    if profile.planes_matching(TPU_CORE_PLANE) and not profile.planes_matching(GPU_PLANE):
        return tpu_op_stats(profile, host)
    gpu_planes = profile.planes_matching(GPU_PLANE)
    if gpu_planes:
        message = GPU_NOT_YET.format(count=len(gpu_planes))
        hardware = "GPU"
    else:
        planes = ", ".join(profile.all_plane_names) or "none"
        message = NO_DEVICE_PLANES.format(planes=planes)
        hardware = "CPU_ONLY"
    return OpStats(
        hosts=[host],
        run_env=RunEnvironment(hardware_type=hardware),
        perf_env=PerfEnv(),
        all_db=empty_db(),
        diagnostics=Diagnostics(info=[message]),
    )


def analyze_file(path: str | os.PathLike) -> OpStats:
    return analyze_profile(read_profile(path), host_name(path))


def analyze_files(paths: list[str | os.PathLike]) -> OpStats:
    """All hosts of a run combined (one file per host)."""
    return combine_hosts([analyze_file(p) for p in paths])
