"""Load test: many concurrent clients against a real ``tensorboard`` serving the plugin.

    python benchmarks/load.py [--seconds 30] [--clients 50] [--max-requests N]
                              [--cache-mb 64] [--logdir DIR] [--port 0]

Generates the demo logdir (``demo.write_demo_logdir``) in a temporary folder unless
``--logdir`` is given, starts ``tensorboard --logdir DIR --host 127.0.0.1 --port FREE
--roofline_cache_mb 64``, waits until it answers, learns the runs, hosts and steps through
the API, then runs the clients (threads, urllib, no proxy) over mixed routes: runs, hosts,
steps, data (datatable; json with step total/average/N), data_csv, compare, static/index.js,
static/style.css and static/plotly.min.js. It stops by itself after ``--seconds`` or
``--max-requests``, stops the server (its own process group) and prints requests, latency
percentiles, status counts, 5xx, errors and the server's peak memory (VmHWM/VmRSS of the
tensorboard process and its worker processes, read from /proc every 0.2 s).

Exit status 1 if any response was a 5xx (or a client got no response at all). Only
127.0.0.1 is ever contacted. ``run_load()`` is what tests/test_faults.py runs, shorter.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

HOST = "127.0.0.1"
PLUGIN = "/data/plugin/roofline"
# No proxy, whatever the environment says: the only server is on 127.0.0.1.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def write_logdir(logdir: str | os.PathLike) -> list[Path]:
    """The demo logdir: TPU training (two hosts, steps), TPU inference, GPU training, v4."""
    from tb_roofline_plugin.demo import write_demo_logdir

    return write_demo_logdir(logdir)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _get(url: str, timeout: float = 120.0) -> tuple[int, bytes]:
    try:
        with _OPENER.open(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


# --- the server ------------------------------------------------------------------------------


class Server:
    """``tensorboard`` in its own process group, its output in a file outside the logdir."""

    def __init__(self, logdir: str | os.PathLike, port: int = 0, cache_mb: float = 64):
        self.port = port or _free_port()
        self.base = f"http://{HOST}:{self.port}"
        exe = Path(sys.executable).with_name("tensorboard")
        command = [str(exe)] if exe.exists() else [sys.executable, "-m", "tensorboard.main"]
        command += ["--logdir", os.fspath(logdir), "--host", HOST, "--port", str(self.port)]
        command += ["--roofline_cache_mb", f"{cache_mb:g}"]
        self._log = tempfile.NamedTemporaryFile(prefix="tb_load_", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own group: its worker processes stop with it
        )

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tensorboard exited ({self.proc.returncode}):\n{self.log()}")
            try:
                status, body = _get(f"{self.base}{PLUGIN}/runs", timeout=10)
                if status == 200 and json.loads(body):
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"tensorboard did not answer in {timeout:g} s:\n{self.log()}")

    def log(self, lines: int = 30) -> str:
        try:
            text = Path(self._log.name).read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def pids(self) -> list[int]:
        """The tensorboard process and its descendants (conversion workers)."""
        found, pending = [], [self.proc.pid]
        while pending:
            pid = pending.pop()
            found.append(pid)
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as f:
                        pending.extend(int(c) for c in f.read().split())
            except OSError:
                continue
        return found

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)  # the group this script created
            except OSError:
                self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
        self._log.close()
        try:
            os.unlink(self._log.name)
        except OSError:
            pass


def _status_kb(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "VmRSS"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


class MemorySampler(threading.Thread):
    """Peak VmHWM of the server process and peak Σ VmRSS of it and its workers."""

    def __init__(self, server: Server, interval: float = 0.2):
        super().__init__(daemon=True)
        self.server, self.interval = server, interval
        self.hwm_kb = self.rss_kb = self.total_rss_kb = self.peak_total_kb = 0
        self.stopped = threading.Event()

    def sample(self) -> None:
        main = _status_kb(self.server.proc.pid)
        if main:
            self.hwm_kb = max(self.hwm_kb, main.get("VmHWM", 0))
            self.rss_kb = main.get("VmRSS", 0)
        total = sum(_status_kb(pid).get("VmRSS", 0) for pid in self.server.pids())
        self.total_rss_kb = total
        self.peak_total_kb = max(self.peak_total_kb, total)

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.sample()


# --- the workload ------------------------------------------------------------------------------


def _url(route: str, **params) -> str:
    query = urllib.parse.urlencode(params)
    return f"{PLUGIN}/{route}" + (f"?{query}" if query else "")


def workload(base: str) -> list[tuple[str, str, int]]:
    """(kind, path, weight) of every request the clients mix, learnt through the API."""
    status, body = _get(f"{base}{PLUGIN}/runs")
    assert status == 200, (status, body[:200])
    runs = json.loads(body)
    items = [("runs", _url("runs"), 2)]
    selections = []  # (run, host, has complete steps)
    for run in runs:
        items.append(("hosts", _url("hosts", run=run), 2))
        status, body = _get(f"{base}{_url('hosts', run=run)}")
        for host in json.loads(body) if status == 200 else []:
            items.append(("steps", _url("steps", run=run, host=host), 2))
            data = {"run": run, "host": host, "tag": "roofline_model"}
            items.append(("data", _url("data", **data), 6))
            items.append(("data json", _url("data", **data, format="json"), 3))
            items.append(("data_csv", _url("data_csv", **data), 2))
            status, body = _get(f"{base}{_url('steps', run=run, host=host)}")
            steps = json.loads(body)["steps"] if status == 200 else []
            averaged = any(s["complete"] for s in steps)
            selections.append((run, host, averaged))
            if averaged:
                items.append(("data json", _url("data", **data, format="json", step="average"), 2))
            for step in steps[:3]:
                url = _url("data", **data, format="json", step=str(step["step_num"]))
                items.append(("data json step", url, 2))
    for a, b in zip(selections, selections[1:] + selections[:1]):
        url = _url("compare", a_run=a[0], a_host=a[1], b_run=b[0], b_host=b[1])
        items.append(("compare", url, 2))
        if a[2]:
            url = _url(
                "compare", a_run=a[0], a_host=a[1], a_step="average", b_run=a[0], b_host=a[1]
            )
            items.append(("compare", url, 1))
    items.append(("static", _url("static/index.js"), 3))
    items.append(("static", _url("static/style.css"), 1))
    items.append(("plotly", _url("static/plotly.min.js"), 1))
    return items


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.statuses: Counter = Counter()
        self.by_kind: Counter = Counter()  # (kind, status)
        self.errors: Counter = Counter()
        self.bad_5xx: list[str] = []
        self.count = 0

    def reserve(self, limit: int) -> bool:
        with self.lock:
            if self.count >= limit:
                return False
            self.count += 1
            return True


def _client(base, items, results: Results, deadline: float, limit: int, seed: int) -> None:
    rng = random.Random(seed)
    weights = [w for _, _, w in items]
    while time.monotonic() < deadline and results.reserve(limit):
        kind, path, _ = rng.choices(items, weights)[0]
        start = time.perf_counter()
        try:
            status, body = _get(base + path, timeout=max(deadline - time.monotonic(), 0) + 60)
        except (OSError, ValueError) as exc:  # no response at all
            with results.lock:
                results.errors[f"{kind}: {type(exc).__name__}: {exc}"[:160]] += 1
            continue
        elapsed = time.perf_counter() - start
        with results.lock:
            results.latencies[kind].append(elapsed)
            results.statuses[status] += 1
            results.by_kind[(kind, status)] += 1
            if status >= 500 and len(results.bad_5xx) < 10:
                results.bad_5xx.append(f"{status} {path}: {body[:200]!r}")


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def run_load(
    logdir: str | os.PathLike,
    *,
    clients: int = 50,
    seconds: float = 30.0,
    max_requests: int = 500_000,
    cache_mb: float = 64,
    port: int = 0,
    out=None,
) -> dict:
    """Starts the server over ``logdir``, runs the clients, stops everything; a report dict."""
    server = Server(logdir, port, cache_mb)
    sampler = MemorySampler(server)
    try:
        server.wait_ready()
        items = workload(server.base)
        sampler.start()
        results = Results()
        started = time.monotonic()
        deadline = started + seconds
        threads = [
            threading.Thread(
                target=_client,
                args=(server.base, items, results, deadline, max_requests, i),
                daemon=True,
            )
            for i in range(clients)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=seconds + 180)
        elapsed = time.monotonic() - started
        hung = sum(t.is_alive() for t in threads)
        sampler.sample()
        server_alive = server.proc.poll() is None
    finally:
        sampler.stopped.set()
        log = server.log()
        server.stop()
    every = [v for values in results.latencies.values() for v in values]
    report = {
        "clients": clients,
        "seconds": round(elapsed, 2),
        "requests": len(every),
        "requests_per_s": round(len(every) / elapsed, 1) if elapsed else 0.0,
        "p50_ms": round(1000 * _percentile(every, 0.50), 2),
        "p99_ms": round(1000 * _percentile(every, 0.99), 2),
        "max_ms": round(1000 * max(every, default=0.0), 2),
        "statuses": dict(sorted(results.statuses.items())),
        "5xx": sum(n for s, n in results.statuses.items() if s >= 500),
        "errors": sum(results.errors.values()) + hung,
        "error_samples": list(results.errors)[:5],
        "5xx_samples": results.bad_5xx,
        "peak_rss_mb": round(sampler.hwm_kb / 1024, 1),
        "final_rss_mb": round(sampler.rss_kb / 1024, 1),
        "peak_rss_with_workers_mb": round(sampler.peak_total_kb / 1024, 1),
        "server_alive_at_end": server_alive,
        "routes": {
            kind: {
                "n": len(values),
                "statuses": {st: n for (k, st), n in sorted(results.by_kind.items()) if k == kind},
                "p50_ms": round(1000 * _percentile(values, 0.5), 2),
                "p99_ms": round(1000 * _percentile(values, 0.99), 2),
            }
            for kind, values in sorted(results.latencies.items())
        },
    }
    if report["5xx"] or report["errors"]:
        report["server_log_tail"] = log
    if out is not None:
        _print(report, out)
    return report


def _print(r: dict, out) -> None:
    print(
        f"load: {r['clients']} clients for {r['seconds']} s against tensorboard on {HOST}",
        file=out,
    )
    print(
        f"requests {r['requests']} ({r['requests_per_s']}/s); statuses {r['statuses']}; "
        f"5xx {r['5xx']}; errors {r['errors']}",
        file=out,
    )
    print(f"latency: p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, max {r['max_ms']} ms", file=out)
    for kind, s in r["routes"].items():
        print(
            f"  {kind:16} {s['n']:7d}  p50 {s['p50_ms']:9.2f} ms  p99 {s['p99_ms']:9.2f} ms",
            file=out,
        )
    print(
        f"tensorboard memory: peak RSS (VmHWM) {r['peak_rss_mb']} MB, RSS at the end "
        f"{r['final_rss_mb']} MB; peak RSS with its workers {r['peak_rss_with_workers_mb']} MB",
        file=out,
    )
    for sample in r["5xx_samples"] + r["error_samples"]:
        print(f"  ! {sample}", file=out)
    if "server_log_tail" in r:
        print("server log (tail):\n" + r["server_log_tail"], file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--max-requests", type=int, default=500_000)
    parser.add_argument("--cache-mb", type=float, default=64)
    parser.add_argument("--logdir", help="serve this logdir instead of a generated demo one")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tb_load_logdir_") as tmp:
        logdir = args.logdir
        if logdir is None:
            logdir = tmp
            files = write_logdir(logdir)
            print(f"generated {len(files)} demo profiles in {logdir}")
        report = run_load(
            logdir,
            clients=args.clients,
            seconds=args.seconds,
            max_requests=args.max_requests,
            cache_mb=args.cache_mb,
            port=args.port,
            out=sys.stdout,
        )
    ok = report["5xx"] == 0 and report["errors"] == 0
    print("OK: no 5xx" if ok else "FAIL: 5xx responses or requests without a response")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
