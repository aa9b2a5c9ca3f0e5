"""Conversion benchmark: wall time and peak RSS of a cold ``tb-roofline export``.

Each measurement runs in a fresh process (``os.wait4`` gives that process's own peak
RSS). Inputs: the shared real samples and generated TPU-shaped profiles. The "floor"
is a full protobuf decode of the same file (``XSpace.FromString``) in a fresh process.

    python benchmarks/run.py [--sizes 10,100] [--repeat 3] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TB_ROOFLINE_SHARED", REPO.parent / "shared")) / "data"
FLOOR = (
    "import sys; from tb_roofline_plugin.protos import xplane_pb2; "
    "xplane_pb2.XSpace.FromString(open(sys.argv[1], 'rb').read())"
)


def measure(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}: {proc.stderr.read().decode()}")
    return wall, usage.ru_maxrss / 1024


def generated(out: Path, megabytes: int) -> Path:
    """A TPU-shaped profile of about ``megabytes`` MB, generated once in another process.

    This process stays small: a child's peak RSS counts what it inherited at fork time.
    """
    path = out / f"tpu_{megabytes}mb.xplane.pb"
    if not path.exists():
        code = (
            "import sys; from tb_roofline_plugin.demo_data import TpuSpec, tpu_xspace, "
            "write_profile; write_profile(sys.argv[1], tpu_xspace(TpuSpec("
            f"target_bytes={megabytes * 1_000_000}, host='bench{megabytes}')))"
        )
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, cwd=REPO)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100", help="generated TPU profile sizes in MB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    inputs = []
    if SHARED.is_dir():
        inputs.append(SHARED / "xprof" / "tpu_inference_2.xplane.pb")
        inputs.extend(sorted(SHARED.glob("tracelens/*/*.xplane.pb")))
        inputs.extend(sorted(SHARED.glob("jax-cpu/*/plugins/profile/*/*.xplane.pb")))
    inputs.extend(generated(args.out, int(mb)) for mb in args.sizes.split(",") if mb)

    header = (
        f"{'profile':44} {'MB':>7} {'export s':>9} {'RSS MiB':>8} "
        f"{'decode s':>9} {'RSS MiB':>8} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for path in inputs:
        exports, floors = [], []
        for _ in range(args.repeat):  # alternate, so both see the same machine state
            exports.append(
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
            floors.append(measure([sys.executable, "-c", FLOOR, str(path)]))
        ex_t = statistics.median(t for t, _ in exports)
        ex_m = max(m for _, m in exports)
        fl_t = statistics.median(t for t, _ in floors)
        fl_m = max(m for _, m in floors)
        name = str(path.relative_to(SHARED)) if path.is_relative_to(SHARED) else path.name
        print(
            f"{name[-44:]:44} {path.stat().st_size / 1e6:7.1f} {ex_t:9.3f} {ex_m:8.0f} "
            f"{fl_t:9.3f} {fl_m:8.0f} {ex_t / fl_t:6.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
