"""Proof that a change left the command's outputs alone: ``tb-roofline export`` of every profile
we have, saved to a folder and compared byte for byte with a folder saved before.

    python benchmarks/outputs_unchanged.py OUT [--against SAVED] [--jobs N] [--also PATH ...]

Profiles: every ``*.xplane.pb`` under the shared data (``TB_ROOFLINE_SHARED`` or ../shared;
the CORRUPT one is skipped) and a demo logdir generated with ``tb-roofline demo --no-serve``
(each run folder, all hosts together, and each host file), and every ``--also`` PATH (a
profile file or a run folder, e.g. the pod ``benchmarks/run.py`` makes in
``benchmarks/out/pod32/plugins/profile/pod``). Each is exported as datatable, json and csv;
json also as ``--step average`` and as its first and last step where it has steps.
Commands run with the input's folder as working directory and relative paths, so the outputs
do not depend on where the folders are. The demo profiles' own bytes are recorded too
(``demo-files.sha256``). With ``--against``, every file of both folders is compared; the exit
status is 1 when any differs or is missing on one side.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import filecmp
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TB_ROOFLINE_SHARED", REPO.parent / "shared")) / "data"
FORMATS = ("datatable", "json", "csv")
# This checkout's package first, whatever is installed.
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))


def _export(cwd: Path, path: str, args: list[str]) -> bytes:
    command = [sys.executable, "-m", "tb_roofline_plugin.cli", "export", path, *args]
    done = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, check=False)
    return done.stdout + f"\n--- exit status {done.returncode}\n".encode() + done.stderr


def _inputs(demo: Path, also: list[Path] = ()) -> list[tuple[str, Path, str]]:
    """(name of the outputs, working directory, path given to the command)."""
    inputs = [(f"also/{p.resolve().name}", p.resolve().parent, p.resolve().name) for p in also]
    if SHARED.is_dir():
        for path in sorted(SHARED.rglob("*.xplane.pb")):
            if "CORRUPT" not in path.name:
                rel = str(path.relative_to(SHARED))
                inputs.append(("shared/" + rel, SHARED, rel))
    else:
        print(f"no shared data at {SHARED}: only the demo logdir", file=sys.stderr)
    for path in sorted(demo.rglob("*.xplane.pb")):
        rel = str(path.relative_to(demo))
        inputs.append(("demo/" + rel, demo, rel))
    for run in sorted({p.parent for p in demo.rglob("*.xplane.pb")}):
        rel = str(run.relative_to(demo))
        inputs.append(("demo/" + rel + "/ALL", demo, rel))
    return inputs


def _outputs_of(name: str, cwd: Path, path: str) -> dict[str, bytes]:
    outputs = {f"{name}.{fmt}": _export(cwd, path, ["--format", fmt]) for fmt in FORMATS}
    text = outputs[f"{name}.json"].split(b"\n--- exit status")[0]
    steps = json.loads(text)["steps"] if text.startswith(b"{") else []
    chosen = ["average"] + sorted({str(s["step_num"]) for s in steps[:1] + steps[-1:]})
    for step in chosen:
        args = ["--format", "json", "--step", step]
        outputs[f"{name}.step-{step}.json"] = _export(cwd, path, args)
    return outputs


def save(out: Path, jobs: int, also: list[Path] = ()) -> int:
    demo = out / "_demo_logdir"
    subprocess.run(
        [sys.executable, "-m", "tb_roofline_plugin.cli", "demo", "--no-serve", "--logdir", demo],
        check=True,
        stdout=subprocess.DEVNULL,
        env=ENV,
    )
    sums = [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(demo)}\n"
        for p in sorted(demo.rglob("*.xplane.pb"))
    ]
    (out / "demo-files.sha256").write_text("".join(sums))
    count = 0
    inputs = _inputs(demo, also)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for outputs in pool.map(lambda i: _outputs_of(*i), inputs):
            for name, data in outputs.items():
                target = out / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                count += 1
    print(f"{count} outputs of {len(inputs)} inputs in {out}")
    return count


def _files(root: Path) -> set[str]:
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and "_demo_logdir" not in p.relative_to(root).parts
    }


def compare(out: Path, saved: Path) -> int:
    ours, theirs = _files(out), _files(saved)
    missing = sorted(theirs ^ ours)
    differ = sorted(
        name for name in ours & theirs if not filecmp.cmp(out / name, saved / name, shallow=False)
    )
    for name in missing:
        print(f"only in {'one' if name in ours else 'the saved'} folder: {name}")
    for name in differ:
        print(f"differs: {name}")
    same = len(ours & theirs) - len(differ)
    print(f"{same} of {len(ours | theirs)} files byte-identical ({out} against {saved})")
    return 1 if missing or differ else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="a new folder for the outputs")
    parser.add_argument("--against", type=Path, help="a folder saved before, to compare with")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--also", type=Path, nargs="+", default=[], help="more profile files or run folders"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=False)
    save(args.out.resolve(), args.jobs, args.also)
    return compare(args.out, args.against) if args.against else 0


if __name__ == "__main__":
    sys.exit(main())
