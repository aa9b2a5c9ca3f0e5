"""Conversion benchmark: cold ``tb-roofline export`` against the protobuf floor and XProf.

For each profile, in fresh processes, run alternately: our export, the "floor" (decoding
the whole file with protobuf, ``XSpace.FromString``), and XProf 2.24.2's roofline_model
tool (``xspace_to_tool_data``) on a fresh copy of the file in a temporary folder (XProf
writes caches next to the profile). Wall time is the median, peak RSS (``os.wait4``) the
maximum over repeats. Then warm requests against a cached host: another step, another
format, through the same service the HTTP routes use.

    python benchmarks/run.py [--sizes 10,100,1000] [--shapes gpu,tpu,cpu] [--repeat 3] [--no-xprof]

XProf runs from benchmarks/.xprof-venv (created with `pip install xprof` when missing).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TB_ROOFLINE_SHARED", REPO.parent / "shared")) / "data"
XPROF_VENV = REPO / "benchmarks" / ".xprof-venv"
FLOOR = (
    "import sys; from tb_roofline_plugin.protos import xplane_pb2; "
    "xplane_pb2.XSpace.FromString(open(sys.argv[1], 'rb').read())"
)
XPROF = (
    "import sys; from xprof.convert import raw_to_tool_data as r; "
    "r.xspace_to_tool_data([sys.argv[1]], 'roofline_model', {'use_saved_result': False})"
)


def measure(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one fresh process (this process stays small)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}: {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def xprof_python() -> str | None:
    python = XPROF_VENV / "bin" / "python"
    if not python.exists():
        print("installing xprof into benchmarks/.xprof-venv ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(XPROF_VENV)], check=True)
        install = subprocess.run([str(python), "-m", "pip", "install", "-q", "xprof"])
        if install.returncode != 0:
            return None
    return str(python)


def measure_xprof(python: str, path: Path) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        shutil.copyfile(path, copy)
        return measure([python, "-c", XPROF, str(copy)])


def generated(out: Path, shape: str, megabytes: int, **extra) -> Path:
    """A profile of about ``megabytes`` MB (0: the spec's own size) from the demo generator,
    made once, in a child process."""
    suffix = "".join(f"_{k}{v}" for k, v in extra.items())
    path = out / f"{shape}_{megabytes}mb{suffix}.xplane.pb"
    if not path.exists():
        spec = {"tpu": "TpuSpec", "gpu": "GpuSpec", "cpu": "CpuSpec"}[shape]
        args = ", ".join(f"{k}={v!r}" for k, v in extra.items())
        code = (
            f"import sys; from tb_roofline_plugin.demo_data import {spec}, {shape}_xspace, "
            f"write_profile; write_profile(sys.argv[1], {shape}_xspace({spec}("
            f"target_bytes={megabytes * 1_000_000}, host='bench'{', ' + args if args else ''})))"
        )
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, cwd=REPO)
    return path


def conversion_table(inputs: list[Path], repeat: int, python: str | None) -> None:
    header = (
        f"{'profile':34} {'MB':>6} {'ours s':>7} {'MiB':>6} {'floor s':>7} {'MiB':>6} "
        f"{'xprof s':>8} {'MiB':>6} {'÷floor':>6} {'÷xprof t':>8} {'÷xprof m':>8}"
    )
    print(header)
    print("-" * len(header))
    for path in inputs:
        ours, floor, xprof = [], [], []
        for _ in range(repeat):  # alternate, so all see the same machine state
            ours.append(
                measure(
                    [
                        sys.executable,
                        "-m",
                        "tb_roofline_plugin.cli",
                        "export",
                        str(path),
                        "-o",
                        os.devnull,
                    ]
                )
            )
            floor.append(measure([sys.executable, "-c", FLOOR, str(path)]))
            if python:
                xprof.append(measure_xprof(python, path))
        o_t, o_m = statistics.median(t for t, _ in ours), max(m for _, m in ours)
        f_t, f_m = statistics.median(t for t, _ in floor), max(m for _, m in floor)
        x_t = statistics.median(t for t, _ in xprof) if xprof else float("nan")
        x_m = max(m for _, m in xprof) if xprof else float("nan")
        name = str(path.relative_to(SHARED)) if path.is_relative_to(SHARED) else path.name
        print(
            f"{name[-34:]:34} {path.stat().st_size / 1e6:6.1f} {o_t:7.2f} {o_m:6.0f} {f_t:7.2f} "
            f"{f_m:6.0f} {x_t:8.2f} {x_m:6.0f} {o_t / f_t:6.2f} {o_t / x_t:8.2f} {o_m / x_m:8.2f}",
            flush=True,
        )


def warm_requests(path: Path) -> None:
    """Server time of warm data requests on a cached host (another step, format, compare)."""
    from tb_roofline_plugin.service import RooflineService

    with tempfile.TemporaryDirectory() as logdir:
        run = Path(logdir, "plugins", "profile", "r")
        run.mkdir(parents=True)
        os.symlink(path, run / "h.xplane.pb")
        service = RooflineService(logdir, workers=1)
        start = time.perf_counter()
        service.data("r", "h", None, "json")
        print(
            f"\nwarm requests, {path.name}: first (cold) json {time.perf_counter() - start:.3f} s"
        )
        steps = [s["step_num"] for s in service.steps("r", "h")["steps"]]
        cases = [("datatable", None), ("json", "average")] + [("json", str(s)) for s in steps[1:4]]
        for fmt, step in cases:
            times = []
            for _ in range(3):
                start = time.perf_counter()
                service.data("r", "h", None, fmt, step)
                times.append(time.perf_counter() - start)
            print(
                f"  data format={fmt} step={step or 'total'}: first {1000 * times[0]:.1f} ms, "
                f"again {1000 * min(times[1:]):.2f} ms"
            )
        start = time.perf_counter()
        service.compare(("r", "h", str(steps[1])), ("r", "h", str(steps[2])))
        took = 1000 * (time.perf_counter() - start)
        print(f"  compare step {steps[1]} vs {steps[2]}: {took:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100", help="generated profile sizes in MB")
    parser.add_argument("--shapes", default="gpu,tpu,cpu", help="generated shapes: gpu, tpu, cpu")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-xprof", action="store_true", help="skip XProf")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    python = None if args.no_xprof else xprof_python()

    inputs = []
    if SHARED.is_dir():
        inputs.append(SHARED / "xprof" / "tpu_inference_2.xplane.pb")
        inputs.extend(sorted(SHARED.glob("tracelens/*/*.xplane.pb")))
        inputs.extend(sorted(SHARED.glob("jax-cpu/*/plugins/profile/*/*.xplane.pb")))
    for shape in args.shapes.split(","):
        inputs.extend(generated(args.out, shape, int(mb)) for mb in args.sizes.split(",") if mb)
    conversion_table(inputs, args.repeat, python)
    warm_requests(generated(args.out, "tpu", 0, ops_per_step=1000, steps=5))
    return 0


if __name__ == "__main__":
    sys.exit(main())
