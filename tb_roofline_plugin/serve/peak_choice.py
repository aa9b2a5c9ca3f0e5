"""The peaks a request judges a profile by: its own (or the server's ``--roofline_peaks``),
a built-in device, or this machine's calibration. Pure functions, no HTTP.

A request names peaks by a word (``calibrated``) or a built-in device name, never by a
path; the choice is applied to an already converted profile, so trying another device
costs a roofline, not a second decode.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ops.op_stats import Diagnostics, OpStats
from ..peaks.devices import BUILTIN, lookup
from ..peaks.perf_env import PerfEnv
from ..platforms.analysis import NO_PEAKS
from .calibrator import CALIBRATED


@dataclass(frozen=True)
class PeaksChoice:
    """Peaks chosen by a request; ``key`` names them in cache keys (canonical, versioned)."""

    key: str
    perf_env: PerfEnv


class UnknownPeaks(ValueError):
    """A ``peaks`` value that is neither a built-in device nor ``calibrated``."""


def builtin_choice(value: str) -> PeaksChoice:
    """A built-in device by key or alias (``H100``, ``tpu-v5p``); UnknownPeaks otherwise."""
    try:
        peaks = lookup(value)
    except KeyError:
        raise UnknownPeaks(
            f"unknown peaks {value!r}; expected {CALIBRATED!r} or a built-in device: "
            f"{', '.join(BUILTIN)}"
        ) from None
    key = next(k for k, entry in BUILTIN.items() if entry is peaks)
    return PeaksChoice(key, peaks.to_perf_env(f"built-in table ({peaks.name})"))


def builtin_devices() -> list[dict]:
    """The built-in devices the tab offers: key, name and vendor, in table order."""
    return [{"key": k, "name": p.name, "vendor": p.vendor} for k, p in BUILTIN.items()]


def with_peaks(stats: OpStats, perf_env: PerfEnv) -> OpStats:
    """``stats`` judged by other peaks: what ``--peaks`` gives, without converting again.

    The ops, steps and notes are shared with ``stats`` (never changed); the "no peaks known"
    warning goes once peaks are known.
    """
    kept = [w for w in stats.diagnostics.warnings if w != NO_PEAKS or not perf_env.known]
    diagnostics = Diagnostics(
        info=list(stats.diagnostics.info),
        warnings=kept,
        errors=list(stats.diagnostics.errors),
    )
    return replace(stats, perf_env=perf_env, diagnostics=diagnostics)
