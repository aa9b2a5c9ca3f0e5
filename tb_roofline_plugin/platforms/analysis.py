"""From a decoded profile to OpStats: picks the platform and reads its ops and steps."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

from google.protobuf.message import DecodeError

from ..errors import ProfileError
from ..hlo.modules import program_modules, program_names
from ..ops.op_metrics import empty_db
from ..ops.op_stats import Diagnostics, OpStats, combine_hosts
from ..peaks.perf_env import PerfEnv, RunEnvironment, finite_env
from ..xspace.discovery import host_name, is_pytorch_trace
from ..xspace.profile_reader import GPU_PLANE, TPU_CORE_PLANE, Profile, decode_profile, read_profile
from .cpu import cpu_op_stats
from .gpu import gpu_op_stats
from .tpu import tpu_op_stats

NO_OPS = (
    "This profile has no TPU or GPU device planes and no XLA op events on the host "
    "(planes: {planes}); there is nothing to put on a roofline."
)
NO_DEVICE_OPS = (
    "The {kind} planes of this profile have no XLA op events (the devices ran nothing while "
    "profiling, or ran code without HLO ops); there is nothing to put on a roofline."
)
CPU_COMPUTED = (
    "CPU roofline computed by tb_roofline_plugin from the HLO cost model (XProf shows no "
    "roofline for CPU profiles)."
)
NO_XLA_PROGRAMS = (
    "This profile has host steps but no XLA programs: the framework ran its own kernels "
    "(e.g. TensorFlow without XLA), which carry no HLO ops to cost, so the steps have times "
    "but no FLOPs or bytes. Compile the step with XLA to get a roofline: "
    "`tf.function(jit_compile=True)` in TensorFlow, `jax.jit` in JAX."
)
NO_PEAKS = (
    "No peaks known for this device: rates and intensities are shown but bound_by is "
    "Unknown. Give peaks with `tb-roofline export --peaks NAME|FILE` (see `tb-roofline "
    "calibrate`) or `tensorboard --roofline_peaks NAME|FILE`."
)


def analyze_profile(profile: Profile, host: str, peaks: PerfEnv | None = None) -> OpStats:
    """OpStats of one host. ``peaks`` (user/table/calibration) replace the profile's."""
    if profile.planes_matching(GPU_PLANE):
        modules, problems = program_modules(profile)
        stats = gpu_op_stats(profile, host, modules)
        stats.notes.extend(problems)
    elif profile.planes_matching(TPU_CORE_PLANE):
        stats = tpu_op_stats(profile, host)
    else:
        modules, problems = program_modules(profile)
        stats = cpu_op_stats(profile, host, modules, peaks)
        stats.notes.extend(problems)
        if stats.run_env.active_core_count == 0 and stats.steps:
            stats.diagnostics.info.append(NO_XLA_PROGRAMS)
            stats.program_names = program_names(profile)
            return stats
        if stats.run_env.active_core_count == 0:
            planes = ", ".join(profile.all_plane_names) or "none"
            return OpStats(
                hosts=[host],
                run_env=RunEnvironment(hardware_type="CPU_ONLY"),
                perf_env=PerfEnv(),
                all_db=empty_db(),
                diagnostics=Diagnostics(info=[NO_OPS.format(planes=planes)]),
            )
        stats.diagnostics.info.append(CPU_COMPUTED)
    if stats.run_env.hardware_type in ("TPU", "GPU") and not (stats.all_db.occurrences > 0).any():
        stats.diagnostics.info.append(NO_DEVICE_OPS.format(kind=stats.run_env.hardware_type))
    stats.perf_env = finite_env(stats.perf_env)
    stats.program_names = program_names(profile)
    if peaks is not None:
        stats = replace(stats, perf_env=peaks)
    if not stats.perf_env.known:
        stats.diagnostics.warnings.append(NO_PEAKS)
    return stats


def analyze_bytes(data: bytes, path: str, peaks: PerfEnv | None = None) -> OpStats:
    """OpStats of a profile's bytes; malformed content is a ProfileError naming ``path``.

    Values no real profile has (overflowing times or shapes, undecodable nested messages)
    surface from deep in the analysis as ValueError/OverflowError/DecodeError; they are the
    file's problem, so they become one-line ProfileErrors here.
    """
    return analyze_decoded(decode_profile(data, path), path, peaks)


def analyze_decoded(profile: Profile, path: str, peaks: PerfEnv | None = None) -> OpStats:
    """``analyze_profile`` with malformed content as a one-line ProfileError naming ``path``."""
    try:
        return analyze_profile(profile, host_name(path), peaks)
    except (ValueError, OverflowError, ArithmeticError, DecodeError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ProfileError(path, f"malformed profile content ({detail})") from None


def analyze_file(path: str | os.PathLike, peaks: PerfEnv | None = None) -> OpStats:
    """OpStats of a local file, an XSpace profile or a PyTorch profiler trace (by its name);
    an XSpace file's bytes are let go as soon as the lines are read."""
    if is_pytorch_trace(path):
        from ..kineto import analyze_trace  # only for PyTorch traces: not imported otherwise

        return analyze_trace(path, peaks)
    profile = read_profile(path, release_lines=True)
    return analyze_decoded(profile, os.fspath(path), peaks)


def analyze_files(paths: Sequence[str | os.PathLike], peaks: PerfEnv | None = None) -> OpStats:
    """All hosts of a run combined (one file per host)."""
    return combine_hosts([analyze_file(p, peaks) for p in paths])
