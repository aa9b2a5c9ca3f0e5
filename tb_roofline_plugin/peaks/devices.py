"""Device peaks beyond a profile's own stats: the built-in table and user peak files.

Profile values win: whatever must match XProf comes from the profile's plane stats
(``perf_env.tpu_perf_env``, ``device_rules.gpu_perf_env``). This module adds what XProf lacks:

- ``BUILTIN``: public per-device peaks (``docs/device-peaks.md``), each with its sources, kept
  as data in ``data/*.json`` (one file per vendor, plus ``aliases.json``) and read through the
  same validator as a user's ``--peaks`` file. They are the fallback when a profile carries
  no peaks (CPU, old runtimes) and the basis of per-dtype ceilings and what-if comparisons.
  Figures are dense (no 2:4 sparsity), per device as XProf shows it: per GPU, per GCD for
  MI250X, **per TensorCore** for TPU.
- ``load_peaks`` / ``load_perf_env``: a ``--peaks`` spec, a built-in name or a JSON file.

Units: TFLOP/s (10^12 FLOP/s; ``int8`` in TOPS) and GB/s (10^9 B/s). XProf's tables show GiB/s.

User peak file (``load_peaks(path)``), a JSON object::

    {
      "name": "my accelerator",            # required, non-empty string
      "dtype_tflops": {"fp32": 1.2, ...},  # required; keys from DTYPES; values >= 0
      "hbm_gbps": 20.0,                    # required, >= 0: main-memory bandwidth
      "memory": "GDDR6",                   # optional: the main memory's kind, from MEMORY_KINDS
                                           # (names the memory roof; "HBM"/"DRAM" when absent)
      "shared_memory_gbps": 0.0,           # optional, >= 0: GPU shared memory / L1 / LDS
      "vmem_read_gbps": 0.0,               # optional, >= 0 (TPU)
      "vmem_write_gbps": 0.0,              # optional, >= 0 (TPU)
      "cores_per_chip": 1,                 # optional integer >= 1
      "has_megacore": false,               # optional
      "has_merged_vmem": false,            # optional
      "vendor": "user",                    # optional: NVIDIA, AMD, Google, CPU or user
      "source": "where the figures come from",  # optional
      "notes": "free text",                # optional
      "details": {...},                    # optional, ignored (calibration measurements)
      "comment": "..."                     # optional, ignored
    }

``calibration.calibrate()`` returns this shape, so its output (``write_calibration``) loads as
a user file. Other keys are rejected, so a misspelt field is reported instead of silently
ignored.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProfileError
from ..files import read_regular
from ..wording import counted
from .perf_env import HBM_RW, SRAM_RD, SRAM_WR, VMEM_RD, VMEM_WR, PerfEnv

DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
# What a device's main memory can be; it names the memory roof in the summary, json and tab
# (an RTX 2080 Ti's roof is GDDR6, not HBM). XProf's datatable columns keep saying HBM.
MEMORY_KINDS = (
    "HBM",
    "HBM2",
    "HBM2e",
    "HBM3",
    "HBM3e",
    "HBM4",
    "GDDR5",
    "GDDR5X",
    "GDDR6",
    "GDDR6X",
    "GDDR7",
    "LPDDR4X",
    "LPDDR5",
    "LPDDR5X",
    "DDR4",
    "DDR5",
    "DRAM",
)
CPU_HARDWARE_TYPES = ("CPU", "CPU_ONLY")


def main_memory(hardware_type: str, memory: str = "") -> str:
    """What the main memory is called in the summary, compare, json and tab: its kind when the
    peaks know it (GDDR6 on an RTX 2080 Ti), else DRAM on a CPU and HBM on accelerators. A
    CPU judged by a GPU's peaks (a what-if) still reads DRAM. XProf's datatable keeps "HBM"."""
    if hardware_type in CPU_HARDWARE_TYPES:
        return memory if memory and not memory.startswith(("HBM", "GDDR")) else "DRAM"
    return memory or "HBM"


# What one of a host's cores is called, singular: XLA:CPU devices (JAX's
# --xla_force_host_platform_device_count), GPUs, TensorCores.
_CORE_UNITS = {"CPU": "device", "CPU_ONLY": "device", "GPU": "GPU", "TPU": "TensorCore"}


def core_unit(hardware_type: str) -> str:
    """``TensorCore``, ``GPU``, ``device`` (XLA:CPU): the unit a profile's cores are counted in."""
    return _CORE_UNITS.get(hardware_type, "core")


def device_time_words(hardware_type: str, cores: int) -> str:
    """What every Program, step and op time of a profile is: "device time", "device time
    summed over 8 TensorCores" (each core's busy time added up; a step's wall time is the
    longest core's, not this). The summary, compare, json and the tab say these words."""
    if cores <= 1:
        return "device time"
    return f"device time summed over {counted(cores, core_unit(hardware_type))}"


# The dtypes whose maximum is XProf's single peak (XProf: max of fp32/fp16 vector and
# tf32/fp16 tensor; bf16 equals fp16 wherever both exist). fp8 and int8 never enter it.
_XPROF_PEAK_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16")
VENDORS = ("NVIDIA", "AMD", "Google", "CPU", "user")
_GPU_VENDORS = ("NVIDIA", "AMD")

TPU_FP32_APPROXIMATE_NOTE = (
    "approximate: TPU FP32 matmuls run as multi-pass BF16; fp32 is taken as bf16/2 "
    "(XProf's own test oracle), other sources say 1/3 or 1/6"
)


@dataclass(frozen=True)
class DevicePeaks:
    """One device's dense peaks, with where they come from (shown next to every roof)."""

    name: str
    vendor: str
    dtype_tflops: dict[str, float]  # per device (per TensorCore on TPU); int8 in TOPS
    hbm_gbps: float
    memory: str = ""  # main memory kind (MEMORY_KINDS); "" = unknown
    shared_memory_gbps: float = 0.0  # GPU shared memory / L1 / LDS aggregate; 0 = unknown
    vmem_read_gbps: float = 0.0  # TPU; 0 where unpublished
    vmem_write_gbps: float = 0.0
    cores_per_chip: int = 1
    has_megacore: bool = False
    has_merged_vmem: bool = False
    source: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem:
            raise _PeaksError(f"device peaks {self.name!r}: {problem}", problem)
        # A private copy, so a caller's dict cannot change a frozen entry afterwards.
        object.__setattr__(self, "dtype_tflops", dict(self.dtype_tflops))

    def peak_tflops(self) -> float:
        """XProf-like single peak: the best float rate (fp8/int8 are left out, as in XProf).

        Falls back to the best of all dtypes when only fp8/int8 are given.
        """
        floats = [self.dtype_tflops[d] for d in _XPROF_PEAK_DTYPES if d in self.dtype_tflops]
        values = floats or list(self.dtype_tflops.values())
        return max(values, default=0.0)

    def to_perf_env(
        self, source_label: str = "built-in table", listed_dtypes_only: bool = False
    ) -> PerfEnv:
        """A PerfEnv in XProf's layout; ``source_label`` says where the peaks came from;
        ``listed_dtypes_only`` (measured or user peaks): dtypes not listed have no ceiling.

        TPUs put VMEM in both the SRAM and VMEM slots, as libtpu's plane stats do. Everything
        else puts shared memory in SRAM_RD/WR (XProf's GPU convention); NVIDIA and AMD entries
        always have merged VMEM, as XProf's GPU roofline does.
        """
        bws = [0.0] * 7
        bws[HBM_RW] = self.hbm_gbps
        bws[VMEM_RD], bws[VMEM_WR] = self.vmem_read_gbps, self.vmem_write_gbps
        if self.vendor == "Google":
            bws[SRAM_RD], bws[SRAM_WR] = self.vmem_read_gbps, self.vmem_write_gbps
        else:
            bws[SRAM_RD] = bws[SRAM_WR] = self.shared_memory_gbps
        merged = self.has_merged_vmem or self.vendor in _GPU_VENDORS
        return PerfEnv(
            peak_tera_flops_per_second=self.peak_tflops(),
            peak_bws_gbps=bws,
            has_megacore=self.has_megacore and self.vendor not in _GPU_VENDORS,
            has_merged_vmem=merged,
            source=source_label,
            dtype_tflops=dict(self.dtype_tflops),
            memory=self.memory,
            listed_dtypes_only=listed_dtypes_only,
        )

    def to_json(self) -> dict[str, object]:
        """The user-file shape; ``from_json(to_json())`` gives an equal object."""
        return {
            "name": self.name,
            "vendor": self.vendor,
            "dtype_tflops": {d: self.dtype_tflops[d] for d in DTYPES if d in self.dtype_tflops},
            "hbm_gbps": self.hbm_gbps,
            "memory": self.memory,
            "shared_memory_gbps": self.shared_memory_gbps,
            "vmem_read_gbps": self.vmem_read_gbps,
            "vmem_write_gbps": self.vmem_write_gbps,
            "cores_per_chip": self.cores_per_chip,
            "has_megacore": self.has_megacore,
            "has_merged_vmem": self.has_merged_vmem,
            "source": self.source,
            "notes": self.notes,
        }

    @classmethod
    def from_json(cls, data: object, default_source: str = "user file") -> DevicePeaks:
        """Validates a user-file object; ``ValueError`` with a one-line reason otherwise."""
        return _from_json(data, default_source)


class _PeaksError(ValueError):
    """A validation error that also carries the bare problem, for callers naming a file."""

    def __init__(self, message: str, problem: str) -> None:
        super().__init__(message)
        self.problem = problem


def _problem(p: DevicePeaks) -> str:
    if not isinstance(p.name, str) or not p.name.strip():
        return "name must be a non-empty string"
    if not isinstance(p.dtype_tflops, Mapping) or not p.dtype_tflops:
        return "dtype_tflops must be a non-empty object"
    unknown = [k for k in p.dtype_tflops if k not in DTYPES]
    if unknown:
        return f"unknown dtype key(s) {', '.join(map(repr, unknown))} (known: {', '.join(DTYPES)})"
    for key, value in p.dtype_tflops.items():
        if not _is_nonneg(value):
            return f"dtype_tflops[{key!r}] must be a finite number >= 0, got {_shown(value)}"
    for name in ("hbm_gbps", "shared_memory_gbps", "vmem_read_gbps", "vmem_write_gbps"):
        value = getattr(p, name)
        if not _is_nonneg(value):
            return f"{name} must be a finite number >= 0, got {_shown(value)}"
    if p.memory != "" and p.memory not in MEMORY_KINDS:
        return f"memory must be one of {', '.join(MEMORY_KINDS)}, got {p.memory!r}"
    if isinstance(p.cores_per_chip, bool) or not isinstance(p.cores_per_chip, int):
        return f"cores_per_chip must be an integer >= 1, got {p.cores_per_chip!r}"
    if p.cores_per_chip < 1:
        return f"cores_per_chip must be an integer >= 1, got {p.cores_per_chip!r}"
    return ""


def _is_nonneg(value: object) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:  # an integer beyond float range (400 digits)
        return False


def _shown(value: object) -> str:
    """A value for a one-line message: its repr, a huge number's cut short."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


_REQUIRED = ("name", "dtype_tflops", "hbm_gbps")
_OPTIONAL = (
    "vendor",
    "memory",
    "shared_memory_gbps",
    "vmem_read_gbps",
    "vmem_write_gbps",
    "cores_per_chip",
    "has_megacore",
    "has_merged_vmem",
    "source",
    "notes",
)
_IGNORED = ("details", "comment")
_MEMORY_BY_LOWER = {kind.lower(): kind for kind in MEMORY_KINDS}


def _from_json(data: object, default_source: str) -> DevicePeaks:
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(map(repr, missing))}")
    unknown = [k for k in data if k not in _REQUIRED + _OPTIONAL + _IGNORED]
    if unknown:
        known = ", ".join(_REQUIRED + _OPTIONAL)
        raise ValueError(f"unknown field(s) {', '.join(map(repr, unknown))} (known: {known})")
    for key in ("vendor", "memory", "source", "notes"):
        if key in data and not isinstance(data[key], str):
            raise ValueError(f"{key} must be a string, got {data[key]!r}")
    for key in ("has_megacore", "has_merged_vmem"):
        if key in data and not isinstance(data[key], bool):
            raise ValueError(f"{key} must be true or false, got {data[key]!r}")
    kwargs = {k: data[k] for k in _REQUIRED + _OPTIONAL if k in data}
    kwargs.setdefault("vendor", "user")
    if "memory" in kwargs:  # "gddr6x" is GDDR6X: the kind's case is not worth an error
        kwargs["memory"] = _MEMORY_BY_LOWER.get(kwargs["memory"].lower(), kwargs["memory"])
    kwargs["source"] = kwargs.get("source") or default_source
    try:
        return DevicePeaks(**kwargs)
    except _PeaksError as error:
        # The bare problem: the caller names the file.
        raise ValueError(error.problem) from None


# --- built-in table (docs/device-peaks.md), read from data/ -----------------------------------

_DATA = Path(__file__).with_name("data")
_TABLE_FILES = ("nvidia.json", "amd.json", "google-tpu.json")


def _read_table() -> dict[str, DevicePeaks]:
    """The built-in entries, each checked by the validator of user peak files."""
    table: dict[str, DevicePeaks] = {}
    for name in _TABLE_FILES:
        path = _DATA / name
        for key, item in json.loads(path.read_text(encoding="utf-8")).items():
            try:
                table[key] = DevicePeaks.from_json(item, default_source="")
            except ValueError as error:
                raise ValueError(f"{path}: {key}: {error}") from None
    return table


BUILTIN: dict[str, DevicePeaks] = _read_table()
_EXTRA_ALIASES: dict[str, str] = json.loads((_DATA / "aliases.json").read_text(encoding="utf-8"))
_VENDOR_PREFIXES = ("nvidia", "tesla", "geforce", "amd", "instinct", "google", "cloud")


def _compact(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_ALIASES: dict[str, str] = {_compact(key): key for key in BUILTIN}
_ALIASES.update(_EXTRA_ALIASES)


def lookup(name: str) -> DevicePeaks:
    """A built-in entry by key or alias, ignoring case, spaces, '-' and '_' ("TPU v6 Lite")."""
    compact = _compact(name)
    while True:
        if compact in _ALIASES:
            return BUILTIN[_ALIASES[compact]]
        prefix = next((p for p in _VENDOR_PREFIXES if compact.startswith(p)), None)
        if prefix is None or compact == prefix:
            break
        compact = compact[len(prefix) :]
    raise KeyError(f"unknown device {name!r}; valid names: {', '.join(BUILTIN)}")


def load_peaks(spec: str) -> DevicePeaks:
    """A built-in name, or a JSON peak file (schema in the module docstring).

    A spec with a path separator or a ``.json`` suffix is always a file; otherwise built-in
    names win over a same-named file in the working directory.
    """
    looks_like_path = spec.lower().endswith(".json") or "/" in spec or os.sep in spec
    if not looks_like_path:
        try:
            return lookup(spec)
        except KeyError:
            if not os.path.exists(spec):
                raise ValueError(
                    f"{spec!r} is neither a built-in device nor a file; "
                    f"built-in names: {', '.join(BUILTIN)}"
                ) from None
    return _load_file(spec)


PEAKS_MAX_BYTES = 1_000_000  # a peak file is a few hundred bytes


def _load_file(path: str) -> DevicePeaks:
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory, not a JSON peak file")
    try:
        text = read_regular(path, PEAKS_MAX_BYTES).decode("utf-8")
    except ProfileError as error:  # missing, not a regular file (a FIFO, /dev/zero), too big
        raise ValueError(f"{path}: {error.problem}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        raise ValueError(f"{path}: not valid JSON ({error.msg} at {where})") from None
    except (ValueError, RecursionError) as error:  # a 5,000-digit number; deep nesting
        detail = str(error).splitlines()[0][:80] if str(error) else "nested too deeply"
        raise ValueError(f"{path}: not valid JSON ({detail})") from None
    try:
        return DevicePeaks.from_json(data, default_source=f"user file {path}")
    except (ValueError, OverflowError, TypeError) as error:
        raise ValueError(f"{path}: {str(error).splitlines()[0][:200]}") from None


def load_perf_env(spec: str) -> PerfEnv:
    """The PerfEnv of a ``--peaks`` spec, labelled with where its figures come from."""
    peaks = load_peaks(spec)
    builtin = any(entry is peaks for entry in BUILTIN.values())
    if builtin:
        label = f"built-in table ({peaks.name})"
    elif peaks.source.startswith("calibration"):
        label = f"calibration ({spec})"
    else:
        label = f"user file ({spec})"
    return peaks.to_perf_env(label, listed_dtypes_only=not builtin)
