"""PyTorch profiler traces: cold ``tb-roofline export`` against HolisticTraceAnalysis loading
the same trace.

    python benchmarks/kineto_vs_hta.py [--mb 200] [--repeat 3] [--formats plain,gzip]
                                       [--no-hta] [--no-breakdown] [--timeout 1200]
                                       [--mem-cap-gb 16]

A generated trace of about ``--mb`` MB of JSON (the demo's PyTorch GPU training run,
``tb_roofline_plugin.demo.pytorch``, made once into ``benchmarks/out/``) is measured plain
(``.pt.trace.json``) and gzipped (``.pt.trace.json.gz``), each in its own folder. In fresh
processes, alternately: our export (datatable, to /dev/null), the floor of parsing the JSON
with the standard library (``json.load``), HTA's ``TraceAnalysis(trace_dir=...)`` (its
default parser) and, unless ``--no-breakdown``, that load followed by
``get_gpu_kernel_breakdown(visualize=False)``. Wall time is the median, peak RSS (``os.wait4``)
the maximum over repeats; every process runs under ``run.py``'s address-space cap and timeout.
HTA runs from ``benchmarks/.hta-venv`` (created with ``pip install HolisticTraceAnalysis``
when missing), never from this project's environment.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import REPO, Result, _cell, _ratio, measure  # noqa: E402

HTA_VENV = REPO / "benchmarks" / ".hta-venv"
WORKER = "worker0.1767225600000"  # as tensorboard_trace_handler names files
FLOOR = (
    "import gzip, json, sys; p = sys.argv[1]; "
    "json.load(gzip.open(p, 'rt') if p.endswith('.gz') else open(p))"
)
GENERATE = (
    "import sys; from tb_roofline_plugin.demo import KinetoSpec, steps_for_mb, "
    "write_trace; write_trace(sys.argv[1], KinetoSpec(steps=steps_for_mb(float(sys.argv[2]))))"
)
HTA_LOAD = (
    "import logging, sys; logging.disable(logging.WARNING); "
    "from hta.trace_analysis import TraceAnalysis; a = TraceAnalysis(trace_dir=sys.argv[1]); "
    "assert a.t.get_trace(0) is not None and len(a.t.get_trace(0)) > 0"
)
HTA_BREAKDOWN = HTA_LOAD + "; a.get_gpu_kernel_breakdown(visualize=False)"


# HTA 0.5's call graph fails under pandas 3 (np.unique(axis=0) of an object array).
HTA_REQUIREMENTS = ["HolisticTraceAnalysis==0.5.*", "pandas<3"]
PANDAS_BELOW_3 = "import pandas, sys; sys.exit(int(pandas.__version__.split('.')[0]) >= 3)"


def hta_python() -> str | None:
    """benchmarks/.hta-venv's python, the venv made when missing (pandas below 3 put in one
    made before); None if pip fails."""
    python = HTA_VENV / "bin" / "python"
    if not python.exists():
        print("installing HolisticTraceAnalysis into benchmarks/.hta-venv ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(HTA_VENV)], check=True)
        command = [str(python), "-m", "pip", "install", "-q", *HTA_REQUIREMENTS]
        if subprocess.run(command).returncode != 0:
            shutil.rmtree(HTA_VENV, ignore_errors=True)
            return None
    elif subprocess.run([str(python), "-c", PANDAS_BELOW_3]).returncode != 0:
        command = [str(python), "-m", "pip", "install", "-q", "pandas<3"]
        if subprocess.run(command).returncode != 0:
            return None
    return str(python)


def traces(out: Path, mb: int) -> list[Path]:
    """The plain and gzipped trace, each alone in its folder (HTA reads a folder), made once
    in a child process under a temporary name."""
    plain = out / f"kineto_{mb}mb_json" / f"{WORKER}.pt.trace.json"
    packed = out / f"kineto_{mb}mb_gz" / f"{WORKER}.pt.trace.json.gz"
    if not plain.exists():
        print(f"generating {plain.relative_to(out)} ...", flush=True)
        subprocess.run([sys.executable, "-c", GENERATE, str(plain), str(mb)], check=True, cwd=REPO)
    if not packed.exists():
        packed.parent.mkdir(parents=True, exist_ok=True)
        partial = packed.with_name(packed.name + ".partial")
        with open(plain, "rb") as source, open(partial, "wb") as raw:
            with gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as target:
                shutil.copyfileobj(source, target, 1 << 20)
        partial.replace(packed)
    return [plain, packed]


def table(inputs: list[Path], python: str | None, repeat: int, breakdown: bool, cap: float,
          timeout: float) -> None:  # fmt: skip
    header = (
        f"{'trace':22} {'MB':>6} {'ours s':>8} {'MiB':>6} {'json s':>8} {'MiB':>6} "
        f"{'HTA s':>8} {'MiB':>6} {'HTA+kb s':>8} {'MiB':>6} {'÷HTA t':>7} {'÷HTA m':>7}"
    )
    print(header)
    print("-" * len(header))
    ours_cmd = [sys.executable, "-m", "tb_roofline_plugin.cli", "export"]
    failures: list[tuple[str, Result]] = []
    for path in inputs:
        runs: dict[str, list[Result]] = {"ours": [], "json": [], "hta": [], "hta+kb": []}
        for _ in range(repeat):  # alternate, so all see the same machine state
            runs["ours"].append(measure(ours_cmd + [str(path), "-o", "/dev/null"], cap, timeout))
            runs["json"].append(measure([sys.executable, "-c", FLOOR, str(path)], cap, timeout))
            if python:
                folder = str(path.parent)
                runs["hta"].append(measure([python, "-c", HTA_LOAD, folder], cap, timeout))
                if breakdown:
                    command = [python, "-c", HTA_BREAKDOWN, folder]
                    runs["hta+kb"].append(measure(command, cap, timeout))
        kind = "gzip" if path.name.endswith(".gz") else "plain"
        cells = " ".join(" ".join(_cell(r, 8)) for r in runs.values())
        print(
            f"{kind + ' ' + path.suffix:22} {path.stat().st_size / 1e6:6.1f} {cells} "
            f"{_ratio(runs['ours'], runs['hta'], 'time', 7)} "
            f"{_ratio(runs['ours'], runs['hta'], 'memory', 7)}",
            flush=True,
        )
        failures += [(f"{kind} {k}", r) for k, rs in runs.items() for r in rs if not r.ok]
    for label, r in failures:
        print(f"    {label}: {r.error} (after {r.wall:.1f} s, peak RSS {r.rss:.0f} MiB)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of the plain JSON, MB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-hta", action="store_true", help="only our export and the floor")
    parser.add_argument("--no-breakdown", action="store_true", help="skip HTA's kernel breakdown")
    parser.add_argument(
        "--formats", default="plain,gzip", help="which of the trace's files: plain, gzip"
    )
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per process")
    parser.add_argument("--mem-cap-gb", type=float, default=16, help="address-space cap, GB")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out")
    args = parser.parse_args(argv)
    python = None if args.no_hta else hta_python()
    if python is None and not args.no_hta:
        print("HolisticTraceAnalysis could not be installed: HTA columns left empty")
    plain, packed = traces(args.out, args.mb)
    chosen = args.formats.split(",")
    inputs = [p for p, kind in ((plain, "plain"), (packed, "gzip")) if kind in chosen]
    table(inputs, python, args.repeat, not args.no_breakdown, args.mem_cap_gb, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
