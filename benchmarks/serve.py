"""HTTP timings against a real ``tensorboard``: the first (cold) and cached ``data`` requests.

    python benchmarks/serve.py [PROFILE | RUN_FOLDER ...]   (default: the shared TPU sample)

Each profile is linked into a temporary logdir (nothing is written next to it), as a run of
one host; a run folder (``.../plugins/profile/<run>/``, e.g. ``benchmarks/run.py``'s 32-host
pod) becomes a run of all its hosts, asked for as ``ALL_HOSTS``. The script starts
TensorBoard on 127.0.0.1 and waits until the plugin answers (TensorBoard's start-up is not
timed), then times requests with urllib, and stops it.

The first request is wall-clock time, so whatever the plugin's worker processes do for it,
their start-up included, is in it; the table also gives the CPU seconds TensorBoard and its
worker processes spent on it and their peak memory together (sampled every 20 ms).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TB_ROOFLINE_SHARED", REPO.parent / "shared")) / "data"
SUFFIX = ".xplane.pb"
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _timed_get(url: str) -> tuple[float, int]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        size = len(response.read())
    return time.perf_counter() - start, size


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux /proc; just ``pid`` elsewhere)."""
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        try:  # a process may end between the listing and the reading, or before both
            tasks = list(Path(f"/proc/{current}/task").glob("*/children"))
        except OSError:
            continue
        for task in tasks:
            try:
                todo.extend(int(child) for child in task.read_text().split())
            except OSError:
                continue
    return tree


def tree_cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds the processes have spent so far (those still alive)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICK


def tree_rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


class PeakTreeMemory:
    """The peak of the process tree's summed resident memory while it runs (a thread)."""

    def __init__(self, pid: int, every_s: float = 0.02) -> None:
        self.pid, self.every_s, self.peak = pid, every_s, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss_mib(process_tree(self.pid)))
            self._stop.wait(self.every_s)

    def __enter__(self) -> PeakTreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _link(logdir: str, i: int, profile: Path) -> tuple[str, float]:
    """Links a profile or a run folder's profiles into run ``run{i}``: (host to ask, MB)."""
    run = Path(logdir, "plugins", "profile", f"run{i}")
    run.mkdir(parents=True)
    if profile.is_dir():
        files = sorted(profile.glob(f"*{SUFFIX}"))
        for path in files:
            os.symlink(path.resolve(), run / path.name)
        return "ALL_HOSTS", sum(p.stat().st_size for p in files) / 1e6
    os.symlink(profile.resolve(), run / profile.name)
    return profile.name[: -len(SUFFIX)], profile.stat().st_size / 1e6


def start_tensorboard(logdir: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """TensorBoard (this venv's, in ``env``) on ``logdir`` and its URL, once the roofline
    plugin answers (SystemExit if it exits or does not answer within 120 s)."""
    port = _free_port()
    exe = Path(sys.executable).with_name("tensorboard")
    proc = subprocess.Popen(
        [str(exe), "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise SystemExit("tensorboard exited before answering")
        try:
            _timed_get(f"{base}/data/plugin/roofline/runs")
            return proc, base
        except OSError:
            if time.monotonic() > deadline:
                proc.terminate()
                raise SystemExit("tensorboard did not answer within 120 s") from None
            time.sleep(0.2)


def measure(profiles: list[Path], repeat_cached: int = 20, env: dict | None = None) -> list[dict]:
    """Starts TensorBoard (in ``env``) on the profiles and times each one's first and cached
    request."""
    rows = []
    with tempfile.TemporaryDirectory() as logdir:
        asked = [_link(logdir, i, profile) for i, profile in enumerate(profiles)]
        proc, root = start_tensorboard(logdir, env)
        base = f"{root}/data/plugin/roofline"
        try:
            for i, (profile, (host, megabytes)) in enumerate(zip(profiles, asked)):
                url = f"{base}/data?run=run{i}&host={host}&tag=roofline_model"
                cpu_before = tree_cpu_s(process_tree(proc.pid))
                with PeakTreeMemory(proc.pid) as memory:
                    first, size = _timed_get(url)
                cpu = tree_cpu_s(process_tree(proc.pid)) - cpu_before
                cached = statistics.median(_timed_get(url)[0] for _ in range(repeat_cached))
                rows.append(
                    {
                        "profile": profile.name,
                        "host": host,
                        "mb": megabytes,
                        "first_s": first,
                        "first_cpu_s": cpu,
                        "peak_mib": memory.peak,
                        "cached_ms": 1000 * cached,
                        "bytes": size,
                    }
                )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return rows


def print_rows(rows: list[dict]) -> None:
    print(
        f"{'profile':36} {'host':>9} {'MB':>6} {'first data s':>13} {'CPU s':>6} "
        f"{'peak MiB':>9} {'cached data ms':>15} {'bytes':>9}"
    )
    for r in rows:
        print(
            f"{r['profile'][-36:]:36} {r['host'][-9:]:>9} {r['mb']:6.1f} {r['first_s']:13.3f} "
            f"{r['first_cpu_s']:6.2f} {r['peak_mib']:9.0f} {r['cached_ms']:15.1f} "
            f"{r['bytes']:9d}",
            flush=True,
        )


def main(argv: list[str]) -> int:
    profiles = [Path(p) for p in argv] or [SHARED / "xprof" / "tpu_inference_2.xplane.pb"]
    print_rows(measure(profiles))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
