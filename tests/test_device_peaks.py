"""Device peaks: XProf's GPU rules against XProf's own check values, the built-in table,
user peak files and calibration (docs/xspace.md §5, docs/device-peaks.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb_roofline_plugin.peaks.calibration import calibrate, write_calibration
from tb_roofline_plugin.peaks.device_rules import gpu_dtype_tflops, gpu_perf_env, tpu_dtype_tflops
from tb_roofline_plugin.peaks.devices import (
    BUILTIN,
    DTYPES,
    MEMORY_KINDS,
    DevicePeaks,
    load_peaks,
    lookup,
)
from tb_roofline_plugin.peaks.perf_env import HBM_RW, SRAM_RD, SRAM_WR, VMEM_RD, VMEM_WR
from tb_roofline_plugin.units import GIB_PER_GB

MI300X_STATS = {
    "compute_cap_major": 9,
    "compute_cap_minor": 4,
    "core_count": 304,
    "clock_rate": 2100000,
    "memory_bandwidth": 2662400000000,
    "memory_size": 206141652992,
    "device_vendor": "AMD",
}


def nvidia(major: int, minor: int, sms: int = 100, ghz: float = 1.0, **extra) -> dict:
    stats = {
        "device_vendor": "Nvidia",
        "compute_cap_major": major,
        "compute_cap_minor": minor,
        "core_count": sms,
        "clock_rate": round(ghz * 1e6),  # kHz
        "memory_bandwidth": 2_000_000_000_000,
    }
    stats.update(extra)
    return stats


# --- GPU peaks by XProf's rules -----------------------------------------------------------


@pytest.mark.parametrize(
    ("sms", "ghz", "cc", "expected", "device_type"),
    [
        (80, 1.53, (7, 0), 125.34, "Nvidia GPU (Volta)"),
        (108, 1.41, (8, 0), 312.0, "Nvidia GPU (Ampere)"),
        (114, 1.62, (9, 0), 756.0, "Nvidia GPU (Hopper)"),
        (148, 1.83, (10, 0), 2218.0, "Nvidia GPU (Blackwell)"),
    ],
)
def test_nvidia_peak_matches_xprof_tests(sms, ghz, cc, expected, device_type):
    env, dtype_string = gpu_perf_env(nvidia(*cc, sms=sms, ghz=ghz))
    assert env.peak_tera_flops_per_second == pytest.approx(expected, abs=1.0)
    assert dtype_string == device_type
    assert env.peak_bws_gbps[HBM_RW] == pytest.approx(2000.0)
    assert env.has_megacore is False


def test_v100_exact_product():
    env, _ = gpu_perf_env(nvidia(7, 0, sms=80, ghz=1.53))
    assert env.peak_tera_flops_per_second == pytest.approx(80 * 1.53 * 1024 / 1000)
    assert round(env.peak_tera_flops_per_second, 2) == 125.34


def test_mi300x_sample_stats():
    env, device_type = gpu_perf_env(MI300X_STATS)
    assert device_type == "AMD GPU - gfx942"
    assert env.peak_tera_flops_per_second == pytest.approx(1307.4, abs=0.1)
    assert env.peak_bws_gbps[HBM_RW] == pytest.approx(2662.4)
    assert env.peak_bws_gbps[SRAM_RD] == pytest.approx(304 * 128 * 2.1)
    assert env.peak_bws_gbps[SRAM_WR] == pytest.approx(81715.2)
    # XProf's reference output shows these in GiB/s.
    assert env.peak_bws_gbps[HBM_RW] / GIB_PER_GB == pytest.approx(2479.55, abs=0.01)
    assert env.peak_bws_gbps[SRAM_WR] / GIB_PER_GB == pytest.approx(76103.2, abs=0.05)
    assert env.has_merged_vmem is True
    assert env.has_megacore is False


@pytest.mark.parametrize(
    ("major", "minor", "expected"),
    [
        (2, 0, "Nvidia GPU (Fermi)"),
        (3, 5, "Nvidia GPU (Kepler)"),
        (5, 2, "Nvidia GPU (Maxwell)"),
        (6, 1, "Nvidia GPU (Pascal)"),
        (7, 0, "Nvidia GPU (Volta)"),
        (7, 2, "Nvidia GPU (Volta)"),
        (7, 5, "Nvidia GPU (Turing)"),
        (8, 6, "Nvidia GPU (Ampere)"),
        (8, 9, "Nvidia GPU (Ada Lovelace)"),
        (9, 0, "Nvidia GPU (Hopper)"),
        (10, 0, "Nvidia GPU (Blackwell)"),
        (12, 0, "Nvidia GPU"),
        (4, 0, "Nvidia GPU"),
    ],
)
def test_nvidia_device_type(major, minor, expected):
    assert gpu_perf_env(nvidia(major, minor))[1] == expected


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"compute_cap_major": 9, "compute_cap_minor": 5}, "AMD GPU - gfx950"),
        ({"gpu_device_name": "gfx90a:sramecc+:xnack-"}, "AMD GPU - gfx90a"),
        ({"gpu_device_name": "gfx908"}, "AMD GPU - gfx908"),
        ({"compute_cap_major": 9, "compute_cap_minor": 0}, "AMD GPU - gfx-9XX series"),
    ],
)
def test_amd_device_type(extra, expected):
    stats = {"device_vendor": "AMD", "core_count": 100, "clock_rate": 1_000_000, **extra}
    assert gpu_perf_env(stats)[1] == expected


def test_amd_arch_rates_and_lds():
    def env(name: str, cus: int, ghz: float):
        stats = {"device_vendor": "AMD", "gpu_device_name": name}
        stats.update(core_count=cus, clock_rate=round(ghz * 1e6))
        return gpu_perf_env(stats)[0]

    mi100 = env("gfx908", 120, 1.502)
    assert mi100.peak_tera_flops_per_second == pytest.approx(184.6, abs=0.1)
    assert mi100.peak_bws_gbps[SRAM_RD] == pytest.approx(120 * 128 * 1.502)
    mi250_gcd = env("gfx90a", 104, 1.7)
    assert mi250_gcd.peak_tera_flops_per_second == pytest.approx(181.0, abs=0.1)
    mi355x = env("gfx950", 256, 2.4)
    assert mi355x.peak_tera_flops_per_second == pytest.approx(2516.6, abs=0.1)
    assert mi355x.peak_bws_gbps[SRAM_WR] == pytest.approx(256 * 256 * 2.4)


def test_unknown_amd_arch_gives_zero_peaks():
    stats = {**MI300X_STATS, "gpu_device_name": "gfx1100"}
    env, device_type = gpu_perf_env(stats)
    assert device_type == "AMD GPU - gfx1100"
    assert env.peak_tera_flops_per_second == 0.0
    assert env.peak_bws_gbps[SRAM_RD] == env.peak_bws_gbps[SRAM_WR] == 0.0
    assert env.peak_bws_gbps[HBM_RW] == pytest.approx(2662.4)
    no_arch = {**MI300X_STATS, "compute_cap_minor": 0}
    assert gpu_perf_env(no_arch)[0].peak_tera_flops_per_second == 0.0


def test_nvidia_shared_memory():
    env, _ = gpu_perf_env(nvidia(9, 0, sms=114, ghz=1.62))
    assert env.peak_bws_gbps[SRAM_RD] == pytest.approx(114 * 256 * 1.62)
    assert env.peak_bws_gbps[SRAM_WR] == pytest.approx(47278.08)
    fermi, _ = gpu_perf_env(nvidia(2, 1, sms=16, ghz=1.5))
    assert fermi.peak_bws_gbps[SRAM_RD] == pytest.approx(16 * 64 * 1.5)
    assert fermi.peak_tera_flops_per_second == pytest.approx(16 * 1.5 * 64 / 1000)


def test_shared_memory_stats_win():
    stats = nvidia(
        9,
        0,
        sms=114,
        ghz=1.62,
        peak_sram_rd_bw_gigabytes_per_second=33000.0,
        peak_sram_wr_bw_gigabytes_per_second=22000.0,
    )
    env, _ = gpu_perf_env(stats)
    assert env.peak_bws_gbps[SRAM_RD] == 33000.0
    assert env.peak_bws_gbps[SRAM_WR] == 22000.0


def test_peak_teraflops_stat_wins():
    env, _ = gpu_perf_env(nvidia(9, 0, sms=114, ghz=1.62, peak_teraflops_per_second=500.5))
    assert env.peak_tera_flops_per_second == 500.5
    amd, _ = gpu_perf_env({**MI300X_STATS, "peak_teraflops_per_second": 1000.0})
    assert amd.peak_tera_flops_per_second == 1000.0
    zero, _ = gpu_perf_env(nvidia(9, 0, sms=114, ghz=1.62, peak_teraflops_per_second=0.0))
    assert zero.peak_tera_flops_per_second == pytest.approx(756.45, abs=0.01)


def test_unknown_cc_uses_highest_entry_below_else_lowest():
    blackwell_consumer, _ = gpu_perf_env(nvidia(12, 0, sms=100, ghz=1.0))
    assert blackwell_consumer.peak_tera_flops_per_second == pytest.approx(819.2)  # 10.0 entry
    ampere_87, _ = gpu_perf_env(nvidia(8, 7, sms=100, ghz=1.0))
    assert ampere_87.peak_tera_flops_per_second == pytest.approx(102.4)  # 8.6 entry
    ancient, _ = gpu_perf_env(nvidia(1, 3, sms=100, ghz=1.0))
    assert ancient.peak_tera_flops_per_second == pytest.approx(6.4)  # lowest (2.0) entry


def test_missing_stats_give_zero():
    env, device_type = gpu_perf_env({"device_vendor": "AMD"})
    assert env.peak_tera_flops_per_second == 0.0
    assert env.peak_bws_gbps == [0.0] * 7
    assert device_type == "AMD GPU - gfx-9XX series"


# --- per-dtype ceilings ---------------------------------------------------------------------


def test_h100_dtype_ceilings():
    ceilings = gpu_dtype_tflops(nvidia(9, 0, sms=114, ghz=1.62))
    assert ceilings["bf16"] == pytest.approx(756.0, abs=1.0)
    assert ceilings["fp16"] == pytest.approx(ceilings["bf16"])
    assert ceilings["fp8"] == pytest.approx(1512.9, abs=0.1)
    assert ceilings["fp32"] == pytest.approx(114 * 1.62 * 256 / 1000)
    assert ceilings["tf32"] == pytest.approx(114 * 1.62 * 2048 / 1000)
    assert ceilings["fp64"] == pytest.approx(114 * 1.62 * 256 / 1000)  # tensor fp64
    assert ceilings["int8"] == pytest.approx(ceilings["fp8"])


def test_volta_has_no_bf16_or_tf32_ceiling():
    ceilings = gpu_dtype_tflops(nvidia(7, 0, sms=80, ghz=1.53))
    assert set(ceilings) == {"fp64", "fp32", "fp16", "int8"}
    assert ceilings["fp32"] == pytest.approx(80 * 1.53 * 128 / 1000)
    assert gpu_dtype_tflops({"device_vendor": "Nvidia", "compute_cap_major": 9}) == {}


def test_amd_dtype_ceilings_scale_the_builtin_entry():
    ceilings = gpu_dtype_tflops(MI300X_STATS)
    assert ceilings["bf16"] == pytest.approx(1307.4)
    assert ceilings["fp8"] == pytest.approx(2614.9)
    assert ceilings["fp64"] == pytest.approx(163.4)
    slower = gpu_dtype_tflops({**MI300X_STATS, "clock_rate": 1050000})
    assert slower["bf16"] == pytest.approx(1307.4 / 2)
    mi250_gcd = gpu_dtype_tflops(
        {"device_vendor": "AMD", "gpu_device_name": "gfx90a", "core_count": 110}
    )
    assert mi250_gcd["bf16"] == pytest.approx(191.5)  # no clock: the table entry, unscaled
    assert gpu_dtype_tflops({"device_vendor": "AMD", "gpu_device_name": "gfx908"}) == {}


def test_tpu_dtype_ceilings():
    v6e = tpu_dtype_tflops("TPU v6 Lite", 918.0)
    assert v6e == {"bf16": 918.0, "fp32": 459.0, "fp8": 918.0, "int8": 1836.0}
    v5p = tpu_dtype_tflops("TPU v5", 233.4)
    assert v5p["int8"] == pytest.approx(466.8)
    assert v5p["fp32"] == pytest.approx(116.7)
    unknown = tpu_dtype_tflops("TPU v99", 100.0)
    assert unknown == {"bf16": 100.0, "fp32": 50.0}
    assert tpu_dtype_tflops("TPU v4", 0.0)["bf16"] == pytest.approx(137.5)
    assert tpu_dtype_tflops("TPU v99", 0.0) == {}


# --- built-in table and lookup --------------------------------------------------------------


def test_builtin_entries_have_sources_and_bandwidth():
    assert len(BUILTIN) == 31
    for key, entry in BUILTIN.items():
        assert entry.source.strip(), key
        if entry.vendor in ("NVIDIA", "AMD"):
            assert entry.memory in MEMORY_KINDS, key  # every GPU names its memory
        assert entry.hbm_gbps > 0, key
        assert entry.peak_tflops() > 0, key
        assert set(entry.dtype_tflops) <= set(DTYPES), key
        assert entry.vendor in ("NVIDIA", "AMD", "Google"), key
        assert key == key.lower() and " " not in key


def test_readme_and_docs_count_the_builtin_devices():
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    docs = (root / "docs" / "device-peaks.md").read_text(encoding="utf-8")
    assert f"{len(BUILTIN)} NVIDIA, AMD and TPU devices" in readme
    assert f"({len(BUILTIN)} in all;" in docs


def test_builtin_figures():
    assert BUILTIN["h100-sxm"].dtype_tflops["bf16"] == 989.4
    assert BUILTIN["h100-sxm"].peak_tflops() == 989.4  # fp8/int8 do not enter the peak
    assert BUILTIN["h100-pcie"].peak_tflops() == 756.0
    assert BUILTIN["mi300x"].peak_tflops() == 1307.4
    assert BUILTIN["mi250x"].peak_tflops() == 191.5
    assert BUILTIN["mi250x"].hbm_gbps == pytest.approx(3276.8 / 2)
    assert BUILTIN["tpu-v5p"].dtype_tflops["bf16"] == 229.5  # per TensorCore
    assert BUILTIN["tpu-v5p"].hbm_gbps == pytest.approx(1382.5)
    assert BUILTIN["tpu7x"].dtype_tflops["fp8"] == 2307.0
    assert BUILTIN["v100-sxm2"].peak_tflops() == 125.0
    assert BUILTIN["a100-sxm-80gb"].hbm_gbps == 2039.0


# Public datasheet figures (dense), each as the entry's source quotes it:
# (key, fp32, bf16 or fp16, memory GB/s, memory kind, SMs x boost GHz for shared memory).
NEW_DEVICES = [
    ("b300", 75.0, 2250.0, 8000.0, "HBM3e", 148 * 2.032),
    ("quadro-gp100", 10.34, 20.67, 717.0, "HBM2", 56 * 1.442),
    ("rtx-2080-ti", 13.45, 53.8, 616.0, "GDDR6", 68 * 1.545),
    ("rtx-3090", 35.6, 71.0, 936.0, "GDDR6X", 82 * 1.695),
    ("rtx-4090", 82.6, 165.2, 1008.0, "GDDR6X", 128 * 2.52),
    ("l40s", 91.6, 362.05, 864.0, "GDDR6", 142 * 2.52),
    ("mi325x", 163.4, 1307.4, 6000.0, "HBM3e", 304 * 2.1 / 2),  # LDS: 128 B/CU/cycle
]


@pytest.mark.parametrize(("key", "fp32", "half", "gbps", "memory", "sm_ghz"), NEW_DEVICES)
def test_new_devices_datasheet_figures(key, fp32, half, gbps, memory, sm_ghz):
    entry = BUILTIN[key]
    assert entry.dtype_tflops["fp32"] == fp32
    assert entry.dtype_tflops.get("bf16", entry.dtype_tflops.get("fp16")) == half
    assert entry.hbm_gbps == gbps and entry.memory == memory
    # XProf's rule: SMs x 256 B/cycle x boost clock (GB/s).
    assert entry.shared_memory_gbps == pytest.approx(sm_ghz * 256, abs=0.06)


def test_new_devices_per_dtype():
    b300 = BUILTIN["b300"].dtype_tflops
    assert (b300["fp64"], b300["tf32"], b300["fp8"], b300["int8"]) == (1.25, 1125.0, 4500.0, 150.0)
    assert BUILTIN["quadro-gp100"].dtype_tflops == {"fp64": 5.168, "fp32": 10.34, "fp16": 20.67}
    assert "bf16" not in BUILTIN["rtx-2080-ti"].dtype_tflops  # Turing has no bf16 path
    assert BUILTIN["rtx-2080-ti"].dtype_tflops["int8"] == 215.2
    assert BUILTIN["rtx-4090"].dtype_tflops["fp8"] == 330.3  # FP32 accumulate
    assert BUILTIN["l40s"].dtype_tflops["fp8"] == 733.0
    assert BUILTIN["mi325x"].dtype_tflops == BUILTIN["mi300x"].dtype_tflops  # same silicon
    assert BUILTIN["mi325x"].peak_tflops() == 1307.4


def test_builtin_memory_kinds():
    kinds = {key: entry.memory for key, entry in BUILTIN.items()}
    assert kinds["h100-sxm"] == "HBM3" and kinds["h100-pcie"] == "HBM2e"
    assert kinds["a100-sxm-40gb"] == "HBM2" and kinds["a100-sxm-80gb"] == "HBM2e"
    assert kinds["t4"] == kinds["l4"] == kinds["a10"] == "GDDR6"
    assert kinds["mi300x"] == "HBM3" and kinds["mi355x"] == "HBM3e"
    assert BUILTIN["rtx-2080-ti"].to_perf_env().memory == "GDDR6"


def test_builtin_to_perf_env():
    gpu = BUILTIN["mi300x"].to_perf_env("built-in table")
    assert gpu.peak_tera_flops_per_second == 1307.4
    assert gpu.peak_bws_gbps[:3] == [5300.0, 81715.2, 81715.2]
    assert gpu.has_merged_vmem and not gpu.has_megacore
    assert gpu.source == "built-in table"
    tpu = BUILTIN["tpu-v6e"].to_perf_env("built-in table (tpu-v6e)")
    assert tpu.peak_tera_flops_per_second == 918.0
    assert tpu.peak_bws_gbps[VMEM_RD] == tpu.peak_bws_gbps[SRAM_RD] == 23296.01
    assert tpu.peak_bws_gbps[VMEM_WR] == 16128.03
    assert tpu.has_merged_vmem and not tpu.has_cmem
    assert BUILTIN["tpu-v4"].to_perf_env().has_megacore is True


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("H100", "h100-sxm"),
        ("h100_sxm", "h100-sxm"),
        ("H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("v6e", "tpu-v6e"),
        ("TPU v6 Lite", "tpu-v6e"),
        ("TPU v5 Lite", "tpu-v5e"),
        ("TPU v5", "tpu-v5p"),
        ("tpu-v4", "tpu-v4"),
        ("Ironwood", "tpu7x"),
        ("MI300X", "mi300x"),
        ("AMD Instinct MI250X", "mi250x"),
        ("gfx950", "mi355x"),
        ("Tesla T4", "t4"),
        ("A100-SXM4-40GB", "a100-sxm-40gb"),
        ("GB200", "b200-gb200"),
        ("B300", "b300"),
        ("NVIDIA B300 SXM6 AC", "b300"),
        ("Quadro GP100", "quadro-gp100"),
        ("NVIDIA GeForce RTX 2080 Ti", "rtx-2080-ti"),
        ("GeForce RTX 3090", "rtx-3090"),
        ("RTX 4090", "rtx-4090"),
        ("NVIDIA L40S", "l40s"),
        ("AMD Instinct MI325X", "mi325x"),
    ],
)
def test_lookup_aliases(name, key):
    assert lookup(name) is BUILTIN[key]


def test_lookup_unknown_lists_valid_names():
    with pytest.raises(KeyError) as info:
        lookup("H300")
    message = str(info.value)
    assert "'H300'" in message
    assert "valid names:" in message
    assert "h100-sxm" in message and "tpu-v6e" in message and "mi300x" in message


# --- user peak files -----------------------------------------------------------------------


def test_load_builtin_name():
    assert load_peaks("v6e") is BUILTIN["tpu-v6e"]


def test_load_user_file(tmp_path):
    path = tmp_path / "peaks.json"
    path.write_text(
        json.dumps(
            {
                "name": "my box",
                "dtype_tflops": {"fp32": 1.2, "bf16": 4.8},
                "hbm_gbps": 20.0,
                "shared_memory_gbps": 100.0,
                "notes": "lab machine",
            }
        )
    )
    peaks = load_peaks(str(path))
    assert peaks.name == "my box"
    assert peaks.vendor == "user"
    assert peaks.dtype_tflops == {"fp32": 1.2, "bf16": 4.8}
    assert peaks.peak_tflops() == 4.8
    assert peaks.hbm_gbps == 20.0
    assert peaks.shared_memory_gbps == 100.0
    assert peaks.source == f"user file {path}"
    env = peaks.to_perf_env("user file")
    assert env.peak_tera_flops_per_second == 4.8
    assert env.peak_bws_gbps[HBM_RW] == 20.0
    assert env.peak_bws_gbps[SRAM_RD] == env.peak_bws_gbps[SRAM_WR] == 100.0
    assert env.has_merged_vmem is False


def test_memory_field_accepted(tmp_path):
    path = tmp_path / "peaks.json"
    base = {"name": "my card", "dtype_tflops": {"fp32": 13.4}, "hbm_gbps": 616.0}
    path.write_text(json.dumps({**base, "memory": "GDDR6"}))
    assert load_peaks(str(path)).memory == "GDDR6"
    assert load_peaks(str(path)).to_perf_env().memory == "GDDR6"
    path.write_text(json.dumps({**base, "memory": "gddr6x"}))  # the kind's case is forgiven
    assert load_peaks(str(path)).memory == "GDDR6X"
    path.write_text(json.dumps(base))
    assert load_peaks(str(path)).memory == ""  # optional: unknown


@pytest.mark.parametrize(
    ("memory", "problem"),
    [("GDDR9", "memory must be one of HBM, HBM2"), (6, "memory must be a string, got 6")],
)
def test_memory_field_rejected(tmp_path, memory, problem):
    path = tmp_path / "peaks.json"
    path.write_text(
        json.dumps({"name": "x", "dtype_tflops": {"fp32": 1}, "hbm_gbps": 1, "memory": memory})
    )
    with pytest.raises(ValueError) as info:
        load_peaks(str(path))
    assert str(info.value).startswith(f"{path}: ") and problem in str(info.value)


def test_json_round_trip():
    for entry in BUILTIN.values():
        assert DevicePeaks.from_json(entry.to_json()) == entry


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "no such file"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"dtype_tflops": {"fp32": 1}, "hbm_gbps": 1}', "missing field(s) 'name'"),
        ('{"name": "x", "hbm_gbps": 1}', "missing field(s) 'dtype_tflops'"),
        ('{"name": "x", "dtype_tflops": {"fp32": 1}}', "missing field(s) 'hbm_gbps'"),
        ('{"name": "x", "dtype_tflops": {"fp32": 1}, "hbm_gbps": -5}', "hbm_gbps must be"),
        ('{"name": "x", "dtype_tflops": {"fp32": -1}, "hbm_gbps": 1}', "dtype_tflops['fp32']"),
        ('{"name": "x", "dtype_tflops": {"fp4": 1}, "hbm_gbps": 1}', "unknown dtype key(s) 'fp4'"),
        ('{"name": "x", "dtype_tflops": {}, "hbm_gbps": 1}', "non-empty"),
        ('{"name": "x", "dtype_tflops": {"fp32": 1}, "hbm_gbps": "1"}', "hbm_gbps must be"),
        ('{"name": "", "dtype_tflops": {"fp32": 1}, "hbm_gbps": 1}', "name must be"),
        ('{"name": "x", "dtype_tflops": {"fp32": 1}, "hbm_gbs": 1}', "missing field(s)"),
        (
            '{"name": "x", "dtype_tflops": {"fp32": 1}, "hbm_gbps": 1, "hbm_gbs": 2}',
            "unknown field(s) 'hbm_gbs'",
        ),
    ],
)
def test_bad_peak_files(tmp_path, content, problem):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError) as info:
        load_peaks(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert problem in message
    assert "\n" not in message


def test_unknown_name_is_a_value_error():
    with pytest.raises(ValueError, match="neither a built-in device nor a file") as info:
        load_peaks("quantum-9000")
    assert "\n" not in str(info.value)


# --- calibration ---------------------------------------------------------------------------


def test_calibrate_small_round_trips(tmp_path):
    result = calibrate(seconds_budget=1.0, matrix_n=256, stream_mib=64, libraries=())
    assert result["vendor"] == "CPU"
    assert str(result["name"]).startswith("calibrated ")
    assert str(result["source"]).startswith(
        "calibration (numpy matmul fp32/fp64, stream copy/triad) on "
    )
    tflops = result["dtype_tflops"]
    assert 1e-4 < tflops["fp64"] < 100 and 1e-4 < tflops["fp32"] < 100
    assert 1.0 < result["hbm_gbps"] < 1000.0
    details = result["details"]
    assert details["matmul_fp64"]["flops"] == 2 * 256**3
    assert details["stream_copy"]["bytes"] == 2 * 64 * 2**20
    assert details["stream_triad"]["bytes"] == 5 * 64 * 2**20
    assert result["hbm_gbps"] == max(
        details["stream_copy"]["gbps"], details["stream_triad"]["gbps"]
    )
    path = tmp_path / "calibration.json"
    write_calibration(str(path), result)
    peaks = load_peaks(str(path))
    assert peaks.vendor == "CPU"
    assert peaks.dtype_tflops == pytest.approx(tflops)
    assert peaks.hbm_gbps == pytest.approx(result["hbm_gbps"])
    assert peaks.peak_tflops() == pytest.approx(max(tflops.values()))
    assert peaks.source == result["source"]


def test_calibrate_rejects_bad_sizes():
    with pytest.raises(ValueError, match="must be positive"):
        calibrate(matrix_n=0)
