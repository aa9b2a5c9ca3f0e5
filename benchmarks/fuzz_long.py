"""Long fuzzing runs of the targets tests/test_fuzz.py runs for seconds.

    python benchmarks/fuzz_long.py --minutes 10 [--targets bytes,fields,hlo,http,trace]
                                   [--seed N] [--save DIR] [--engine random|atheris]

``random`` (default): our mutators (``tests/fuzz_support.py``), equal time for each target,
for the given time; prints executions, time and outcomes per target every 30 s and at the
end, and every new failure (one not in ``fuzz_support.KNOWN_BUGS``) with its traceback; the
input of each distinct new failure is saved under ``--save`` (default
``benchmarks/out/fuzz``, git-ignored). Exit status 1 when there was a new failure.

``atheris``: coverage-guided libFuzzer (``pip install atheris``) on the profile-bytes target,
seeded with the same corpus (copied into a temporary folder, never into the repository);
libFuzzer prints its own statistics ("Done N runs in S second(s)").

``trace``: the PyTorch profiler (Kineto) reader and the pipeline after it, on mutated traces
(half byte level: gzip truncated or flipped, JSON numbers replaced by NaN, Infinity, 1e308,
2**70, null, strings or lists, bytes mutated; half structure level: wrong types, nulls and
extreme numbers in events and args, events dropped or repeated), each parsed by the
standard library or orjson at random. Its seeds add the A100 sample (35 MB of JSON, about
1 s a run, one run in 20) to the small ones tests/test_fuzz.py uses.

Seeds are the real profiles in ``../shared/data`` (``TB_ROOFLINE_SHARED``), read at run
time, and small generated ones.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for path in (REPO, REPO / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

TARGETS = ("bytes", "fields", "hlo", "http", "trace")


def _signature(failure) -> str:
    """kind + last traceback line + innermost plugin frames: one line per distinct bug."""
    last = failure.detail.strip().splitlines()[-1][:120] if failure.detail.strip() else ""
    frames = re.findall(
        r'File "[^"]*tb_roofline_plugin/([^"]+)", line \d+, in (\w+)', failure.detail
    )
    where = " < ".join(f"{f}:{fn}" for f, fn in frames[-2:][::-1])
    return f"{failure.kind}: {last} [{where}]"


class Runner:
    def __init__(self, seed: int, save: Path):
        import fuzz_support as fs

        self.fs = fs
        self.rng = random.Random(seed)
        self.save = save
        self.seeds = fs.seed_profiles()
        self.data = [d for _, d in self.seeds]
        self.modules = list(fs.seed_modules())
        self.counts = {t: collections.Counter() for t in TARGETS}
        self.spent = collections.Counter()
        self.new: dict[str, tuple[str, str]] = {}
        self._http = None
        self.traces = list(fs.kineto_seeds())
        self.traces += [
            (f"pytorch/{p.parent.name}/{p.name}", p.read_bytes())
            for p in sorted(fs.KINETO_DIR.glob("a100_recsys/*.pt.trace.json*"))
        ]
        self.trace_documents: dict[str, dict] = {}

    def _http_target(self):
        if self._http is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="fuzz_http_")
            self._http = self.fs.http_target(Path(self._tmp.name))
        return self._http

    def one(self, target: str) -> None:
        fs, rng = self.fs, self.rng
        data = None
        if target == "bytes":
            name, data = rng.choice(self.seeds)
            for _ in range(rng.choice((1, 1, 2, 3))):
                data, _ = fs.mutate_bytes(rng, data, self.data)
            run, blob = (lambda: fs.profile_target(data, name)), data
        elif target == "fields":
            name, seed = rng.choice(self.seeds)
            data, _ = fs.mutate_xspace_fields(rng, seed, rng.choice((1, 1, 2, 4)))
            run, blob = (lambda: fs.profile_target(data, name)), data
        elif target == "hlo":
            module = rng.choice(self.modules)
            if rng.random() < 0.2:
                blob = module.SerializeToString()
                for _ in range(rng.choice((1, 2))):
                    blob, _ = fs.mutate_bytes(rng, blob)
                run = lambda: fs.hlo_bytes_target(blob)  # noqa: E731
            else:
                mutated, _ = fs.mutate_module(rng, module, rng.choice((1, 2, 4, 8)))
                blob = mutated.SerializeToString()
                run = lambda: fs.hlo_target(mutated)  # noqa: E731
        elif target == "trace":
            small = len(fs.kineto_seeds())
            large = self.traces[small:]  # 1 s a run: one run in 20
            pool = large if large and rng.random() < 0.05 else self.traces[:small]
            name, seed = rng.choice(pool)
            stdlib = rng.random() < 0.5
            if rng.random() < 0.5:
                data = seed
                for _ in range(rng.choice((1, 1, 2, 3))):
                    data, _ = fs.mutate_trace_bytes(rng, data)
            else:
                if name not in self.trace_documents:
                    self.trace_documents[name] = fs.trace_document(seed)
                document = json.loads(json.dumps(self.trace_documents[name]))
                fs.mutate_trace_document(rng, document, rng.choice((1, 1, 2, 4)))
                data = fs.trace_bytes(document, gz=rng.random() < 0.2)
            blob, trace = data, data
            run = lambda: fs.kineto_target(trace, fs.KINETO_NAME, stdlib)  # noqa: E731
            data = None  # not an XSpace: no known bug is about its doubles
        else:
            http, runs = self._http_target()
            route, query = fs.random_request(rng, runs)
            blob = f"{route}?".encode() + (query if isinstance(query, bytes) else query.encode())
            run = lambda: http(f"{fs.BASE}/{route}", query)  # noqa: E731
        self.counts[target]["executions"] += 1
        try:
            outcome = run()
        except fs.FuzzFailure as failure:
            bug = fs.known_bug(failure, data)
            if bug is not None:
                self.counts[target][f"known {bug.bug_id}"] += 1
                return
            self.counts[target]["NEW FAILURE"] += 1
            self._report(target, failure, blob)
            return
        self.counts[target][outcome.split(":")[0]] += 1

    def _report(self, target: str, failure, blob: bytes) -> None:
        signature = _signature(failure)
        if signature in self.new:
            return
        digest = hashlib.sha1(blob).hexdigest()[:12]
        self.save.mkdir(parents=True, exist_ok=True)
        path = self.save / f"{target}-{digest}.bin"
        path.write_bytes(blob)
        (self.save / f"{target}-{digest}.txt").write_text(
            f"{signature}\n{failure.where}\n{failure.detail}\n"
        )
        self.new[signature] = (target, str(path))
        print(f"\nNEW FAILURE ({target}): {signature}\n  input saved to {path}", flush=True)
        print(failure.detail[-2000:], flush=True)

    def print_summary(self, total: float) -> None:
        runs = sum(c["executions"] for c in self.counts.values())
        print(f"\n{runs} executions in {total:.1f} s ({runs / max(total, 1e-9):.1f}/s)")
        for target in TARGETS:
            counts = self.counts[target]
            if not counts["executions"]:
                continue
            spent = self.spent[target]
            rest = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "executions")
            print(
                f"  {target:7} {counts['executions']:8d} executions in {spent:7.1f} s "
                f"({counts['executions'] / max(spent, 1e-9):6.1f}/s): {rest}"
            )
        print(f"new failures: {len(self.new)}")
        for signature, (target, path) in self.new.items():
            print(f"  {target}: {signature}\n    {path}")


def run_random(minutes: float, targets: list[str], seed: int, save: Path) -> int:
    import logging

    logging.getLogger("tensorboard").setLevel(logging.ERROR)  # no "path ... not found" lines
    runner = Runner(seed, save)
    print(
        f"fuzzing {', '.join(targets)} for {minutes:g} min (seed {seed}); corpus: "
        f"{len(runner.seeds)} profiles, {len(runner.modules)} HLO modules",
        flush=True,
    )
    start = time.monotonic()
    end = start + 60 * minutes
    next_report = start + 30
    while time.monotonic() < end:
        target = min(targets, key=lambda t: runner.spent[t])  # equal time for each target
        t0 = time.monotonic()
        runner.one(target)
        runner.spent[target] += time.monotonic() - t0
        if time.monotonic() >= next_report:
            runs = sum(c["executions"] for c in runner.counts.values())
            elapsed = time.monotonic() - start
            print(
                f"[{elapsed:6.0f} s] {runs} executions, {len(runner.new)} new failures", flush=True
            )
            next_report += 30
    runner.print_summary(time.monotonic() - start)
    return 1 if runner.new else 0


def run_atheris(minutes: float, seed: int) -> int:
    try:
        import atheris
    except ImportError:
        print("atheris is not installed: pip install atheris (or use --engine random)")
        return 2
    with atheris.instrument_imports():
        import tb_roofline_plugin.platforms.analysis  # noqa: F401
        import tb_roofline_plugin.render.datatable  # noqa: F401
        import tb_roofline_plugin.render.export  # noqa: F401
        import tb_roofline_plugin.roofline.model  # noqa: F401
        import tb_roofline_plugin.xspace.profile_reader  # noqa: F401
    import fuzz_support as fs

    corpus = Path(tempfile.mkdtemp(prefix="fuzz_corpus_"))
    for _, data in fs.seed_profiles():
        (corpus / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(
        f"atheris on the profile bytes for {minutes:g} min; corpus copied to {corpus}", flush=True
    )

    def one_input(data: bytes) -> None:
        try:
            fs.profile_target(data, "fuzz.xplane.pb")
        except fs.FuzzFailure as failure:
            if fs.known_bug(failure, data) is None:
                raise

    args = [sys.argv[0], f"-max_total_time={max(int(60 * minutes), 1)}", f"-seed={seed}"]
    args += ["-rss_limit_mb=4096", "-timeout=30", str(corpus)]
    try:
        atheris.Setup(args, one_input)
        atheris.Fuzz()
    finally:
        shutil.rmtree(corpus, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--targets", default=",".join(TARGETS), help="bytes,fields,hlo,http,trace")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--save", type=Path, default=REPO / "benchmarks" / "out" / "fuzz")
    parser.add_argument("--engine", choices=("random", "atheris"), default="random")
    args = parser.parse_args(argv)
    if args.engine == "atheris":
        return run_atheris(args.minutes, args.seed)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        parser.error(f"unknown targets {unknown}; choose from {', '.join(TARGETS)}")
    return run_random(args.minutes, targets, args.seed, args.save)


if __name__ == "__main__":
    sys.exit(main())
