"""HTTP timings against a real ``tensorboard``: the first (cold) and cached ``data`` requests.

    python benchmarks/serve.py [PROFILE ...]   (default: the shared TPU sample)

Each profile is linked into a temporary logdir (nothing is written next to it); the
script starts TensorBoard on 127.0.0.1, times requests with urllib, and stops it.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TB_ROOFLINE_SHARED", REPO.parent / "shared")) / "data"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _timed_get(url: str) -> tuple[float, int]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        size = len(response.read())
    return time.perf_counter() - start, size


def main(argv: list[str]) -> int:
    profiles = [Path(p) for p in argv] or [SHARED / "xprof" / "tpu_inference_2.xplane.pb"]
    with tempfile.TemporaryDirectory() as logdir:
        for i, profile in enumerate(profiles):
            run = Path(logdir, "plugins", "profile", f"run{i}")
            run.mkdir(parents=True)
            os.symlink(profile.resolve(), run / profile.name)
        port = _free_port()
        exe = Path(sys.executable).with_name("tensorboard")
        proc = subprocess.Popen(
            [str(exe), "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}/data/plugin/roofline"
        try:
            for _ in range(300):
                try:
                    _timed_get(f"{base}/runs")
                    break
                except OSError:
                    time.sleep(0.2)
            print(
                f"{'profile':36} {'MB':>6} {'first data s':>13} {'cached data ms':>15} {'bytes':>9}"
            )
            for i, profile in enumerate(profiles):
                host = profile.name[: -len(".xplane.pb")]
                url = f"{base}/data?run=run{i}&host={host}&tag=roofline_model"
                first, size = _timed_get(url)
                cached = statistics.median(_timed_get(url)[0] for _ in range(20))
                print(
                    f"{profile.name[-36:]:36} {profile.stat().st_size / 1e6:6.1f} "
                    f"{first:13.3f} {1000 * cached:15.1f} {size:9d}"
                )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
