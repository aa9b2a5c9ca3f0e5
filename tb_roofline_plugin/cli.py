"""The ``tb-roofline`` command: export rooflines of profiles, and the demo."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from typing import Iterable

from .errors import RooflineError
from .heap import cycles_collected_rarely, reuse_freed_memory
from .metadata import PARALLEL_MIN_CORES, PARALLEL_MIN_MB
from .wording import terminal_safe

EXIT_BAD_INPUT = 2
DEFAULT_LAYER_DEPTH = 2  # summary --by layer: the Program, top-level layers and theirs
_PEAKS_HELP = (
    "device peaks to judge by instead of the profile's (a what-if), or for profiles without "
    "peaks (CPU): a built-in device name (e.g. h100-sxm, mi300x, tpu-v5p) or a JSON file "
    "(see `calibrate`)"
)

_DEVICE_HELP = (
    "all (default) or one device of the host: an XLA:CPU device_ordinal, the N of "
    "/device:GPU:N or /device:TPU:N (the json's device.devices lists them)"
)


def _export(args: argparse.Namespace) -> int:
    from .xspace.sources import profile_files

    if args.dask or args.cache_dir:
        if args.device is not None:
            raise RooflineError("--device shows one device; --dask and --cache-dir convert hosts")
        return _export_to_cache(args)
    files = profile_files(args.path, args.host)
    _read_ahead(files)
    from .ops.selection import parse_step
    from .platforms.analysis import analyze_file, analyze_files
    from .render.export import render_pieces

    step = parse_step(args.step)
    by_layer = args.by == "layer"
    if by_layer and args.format != "csv":
        raise RooflineError(
            "--by layer writes the layers' CSV (use --format csv); the json carries them in "
            "its 'layers' key"
        )
    if args.depth is not None and not by_layer:
        raise RooflineError("--depth cuts the layers' CSV; use --format csv --by layer")
    if step != "total" and args.format != "json" and not by_layer:
        raise RooflineError("--step selects records of the json format; use --format json")
    _refuse_overwriting(args.output, files)
    device = _device(args, files)
    if device is None:
        stats = analyze_files(files, _peaks(args), args.workers, _start_method())
    else:
        stats = analyze_file(files[0], _peaks(args), device)
    if by_layer:
        from .render.layers import layers_csv

        _write(layers_csv(stats, step, args.depth), args.output)
        return 0
    pieces = render_pieces(stats, args.format, files, step)
    del stats  # what the pieces need they hold: a datatable's or CSV's, only its records
    _write(pieces, args.output)
    return 0


def _read_ahead(files: list[str]) -> None:
    """One XSpace file read while the analysis is imported (``files.read_ahead``): not
    several (a worker process may be the one to read each), nor a PyTorch trace (read as
    text, another way; told apart as ``analyze_file`` tells them)."""
    from .files import read_ahead
    from .xspace.discovery import file_head, is_trace_file

    if len(files) == 1 and not is_trace_file(files[0], file_head(files[0])):
        read_ahead(files[0])


def _export_to_cache(args: argparse.Namespace) -> int:
    """Converts every host of PATH (a file, a run or a whole logdir) into --cache-dir."""
    from .serve.convert import convert_to_store
    from .xspace.discovery import discover
    from .xspace.sources import profile_files

    if not args.cache_dir:
        raise RooflineError("--dask needs --cache-dir DIR (outside the logdir)")
    root = os.path.realpath(args.path)
    cache = os.path.realpath(args.cache_dir)
    if os.path.isdir(root) and (cache == root or cache.startswith(root + os.sep)):
        raise RooflineError(
            f"--cache-dir {args.cache_dir} is inside {args.path}; use a folder outside the logdir"
        )
    runs = discover(args.path) if os.path.isdir(args.path) else {}
    paths = [h.path for run in runs.values() for h in run.hosts.values()]
    if not paths:
        paths = profile_files(args.path, args.host)
    _peaks(args)  # a bad --peaks fails here, not in every task
    from .serve.stats_store import remove_temporaries

    remove_temporaries(args.cache_dir)  # left by an export killed mid-write
    if args.dask:
        results = _run_on_dask(args.dask, paths, args.cache_dir, args.peaks)
    else:
        results = [convert_to_store(p, args.cache_dir, args.peaks) for p in paths]
    failed = [(p, status) for p, status in results if status not in ("ok", "cached")]
    done = len(results) - len(failed)
    print(f"{done} of {len(results)} host profiles in {args.cache_dir}")
    for _, status in failed:
        print(f"tb-roofline: error: {terminal_safe(status)}", file=sys.stderr)
    return EXIT_BAD_INPUT if failed else 0


def _run_on_dask(scheduler: str, paths: list[str], cache_dir: str, peaks: str | None):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RooflineError(
            "--dask needs dask.distributed: pip install 'tb-roofline-plugin[dask]'"
        ) from None
    from .serve.convert import convert_to_store

    cluster = None
    if scheduler == "local":
        cluster = LocalCluster(processes=True, threads_per_worker=1, dashboard_address=None)
    try:
        with Client(cluster if cluster is not None else scheduler) as client:
            futures = client.map(
                convert_to_store, paths, cache_dir=cache_dir, peaks=peaks, pure=False
            )
            return client.gather(futures)
    finally:
        if cluster is not None:
            cluster.close()


def _start_method() -> str | None:
    """``fork`` where this command may fork (Linux, no other thread: it imports no library
    that starts any but numpy's BLAS, which is fork-safe): workers start in milliseconds."""
    import threading

    alone = threading.active_count() == 1
    return "fork" if sys.platform == "linux" and alone else None


def _percent_limit(text: str) -> float:
    """--fail-if-slower: a finite percentage, 0 or more (NaN would pass every comparison)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of percent, not {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite percentage, 0 or more, not {text}")
    return value


def _refuse_overwriting(output: str | None, inputs: list[str]) -> None:
    """--output must not be one of the profiles read (also through a symlink or a hard link):
    writing it would destroy the input before, or while, it is read."""
    if output is None or output == "-" or not os.path.exists(output):
        return
    for path in inputs:
        try:
            same = os.path.samefile(output, path)
        except OSError:
            same = os.path.realpath(output) == os.path.realpath(path)
        if same:
            raise RooflineError(f"--output {output} is the input profile {path}; not overwritten")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _add_by(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--by op|layer`` (default op): what a line of the output is."""
    parser.add_argument("--by", choices=("op", "layer"), default="op", help=help_text)


def _depth(text: str) -> int:
    """--depth: a whole number of layer levels, 0 (the Program alone) or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _peaks(args: argparse.Namespace):
    """The PerfEnv of ``--peaks`` (a built-in device name or a JSON file), or None."""
    if not getattr(args, "peaks", None):
        return None
    from .peaks.devices import load_perf_env

    try:
        return load_perf_env(args.peaks)
    except (KeyError, ValueError) as exc:
        message = exc.args[0] if exc.args else str(exc)
        raise RooflineError(f"--peaks: {message}") from None


def _calibrate(args: argparse.Namespace) -> int:
    from .peaks.calibration import calibrate, write_calibration

    if args.output and os.path.isdir(args.output):  # said before measuring, not after
        raise RooflineError(f"--output {args.output} is a directory; give a file name")
    result = calibrate(matrix_n=512, stream_mib=128) if args.quick else calibrate()
    if args.output:
        try:
            write_calibration(args.output, result)
        except OSError as exc:
            raise RooflineError(f"{args.output}: cannot write ({exc.strerror or exc})") from None
        print(f"wrote {args.output}")
    else:
        import json

        print(json.dumps(result, indent=1))
    flops = ", ".join(
        f"{k} {v:,.2f} {'TOPS' if k == 'int8' else 'TFLOP/s'}"
        for k, v in result["dtype_tflops"].items()
    )
    print(f"{result['name']}: {flops}; memory {result['hbm_gbps']:,.1f} GB/s", file=sys.stderr)
    return 0


def _summary(args: argparse.Namespace) -> int:
    from .xspace.sources import profile_files

    files = profile_files(args.path, args.host)
    _read_ahead(files)
    from .ops.selection import parse_step
    from .platforms.analysis import analyze_file, analyze_files
    from .render.summary import summary_text

    step = parse_step(args.step)
    if args.by != "layer" and (args.depth is not None or step != "total"):
        raise RooflineError("--depth and --step go with --by layer (the ops' summary is of Total)")
    _refuse_overwriting(args.output, files)
    device = _device(args, files)
    if device is None:
        stats = analyze_files(files, _peaks(args))
    else:
        stats = analyze_file(files[0], _peaks(args), device)
    if args.by == "layer":
        from .render.summary import layer_summary_text

        depth = DEFAULT_LAYER_DEPTH if args.depth is None else args.depth
        _write(layer_summary_text(stats, files, step, depth), args.output)
        return 0
    _write(summary_text(stats, files, top=args.top), args.output)
    return 0


def _device(args: argparse.Namespace, files: list[str]) -> int | None:
    """``--device``: None (all) or a device number, of one host's file."""
    from .ops.selection import parse_device

    device = parse_device(args.device)
    if device is not None and len(files) > 1:
        from .xspace.discovery import host_name

        hosts = ", ".join(host_name(f) for f in files)
        raise RooflineError(
            f"--device {device} shows a device of one host: add --host HOST (hosts: {hosts})"
        )
    return device


def _compare(args: argparse.Namespace) -> int:
    from .ops.selection import parse_step, per_step_selection
    from .platforms.analysis import analyze_files
    from .roofline.compare import Side, compare, compare_csv, compare_table, slower_by_pct
    from .xspace.sources import profile_files

    peaks = _peaks(args)
    sides = []
    for path, host, step in (
        (args.a, args.a_host, args.a_step),
        (args.b, args.b_host, args.b_step),
    ):
        files = profile_files(path, host)
        _refuse_overwriting(args.output, files)
        stats = analyze_files(files, peaks)
        selection = per_step_selection(stats, parse_step(step))
        label = f"{path}" + (f" host {host}" if host else "") + f" step {selection.label}"
        sides.append(Side(label, stats, selection))
    result = compare(*sides)
    if args.format == "json":
        import json

        text = json.dumps(result, indent=1)
    elif args.format == "csv":
        text = compare_csv(result)
    else:
        text = compare_table(result, top=args.top)
    _write(text, args.output)
    if args.fail_if_slower is not None and slower_by_pct(result) > args.fail_if_slower:
        print(
            f"tb-roofline: B is {slower_by_pct(result):.1f}% slower per step than A "
            f"(limit {args.fail_if_slower:g}%)",
            file=sys.stderr,
        )
        return 1
    return 0


def _demo(args: argparse.Namespace) -> int:
    """Writes a demo logdir (several runs, two hosts, steps) and serves it with TensorBoard."""
    from .demo.logdir import write_demo_logdir
    from .render.summary import demo_summary

    paths = write_demo_logdir(args.logdir)
    print(f"wrote {len(paths)} demo profiles under {os.path.abspath(args.logdir)}")
    if args.no_serve:
        print(demo_summary(str(paths[0])))
        return 0
    url = f"http://{args.host}:{args.port}/#roofline"
    print(f"starting TensorBoard with the roofline plugin: open {url}  (Ctrl-C stops it)")
    sys.stdout.flush()
    exe = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    command = [exe] if os.path.exists(exe) else [sys.executable, "-m", "tensorboard.main"]
    command += ["--logdir", args.logdir, "--host", args.host, "--port", str(args.port)]
    try:
        import subprocess

        return subprocess.call(command)
    except KeyboardInterrupt:
        return 0


def _write(text: str | Iterable[str], output: str | None) -> None:
    """Writes a text, or its pieces one after the other as they are made, to ``output`` (or
    stdout, ending it with a newline)."""
    pieces = [text] if isinstance(text, str) else text
    if output is None or output == "-":
        last = ""
        for piece in pieces:
            sys.stdout.write(piece)
            last = piece or last
        if not last.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.flush()
        return
    from .render.json_text import write_pieces

    try:
        with open(output, "wb", buffering=0) as f:
            write_pieces(f, pieces)
    except OSError as exc:
        raise RooflineError(f"{output}: cannot write ({exc.strerror or exc})") from None


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad command line said in one line (and exit status 2)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {terminal_safe(message)} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tb-roofline",
        description="Roofline models of ML profiles (XSpace *.xplane.pb, PyTorch profiler traces).",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    export = sub.add_parser("export", help="convert a profile or run folder to roofline data")
    export.add_argument(
        "path",
        help="an .xplane.pb file, a PyTorch profiler trace (JSON under any name) or a run folder",
    )
    export.add_argument("--host", help="only this host of a run folder")
    export.add_argument(
        "--format",
        choices=("datatable", "json", "csv"),
        default="datatable",
        help="datatable: XProf-compatible JSON (default); json: complete; csv: one row a record",
    )
    export.add_argument("--output", "-o", help="write here instead of standard output")
    export.add_argument("--peaks", help=_PEAKS_HELP)
    export.add_argument(
        "--step",
        default="total",
        help="json only: total (default: the whole profile, XProf's records), average, or a "
        "step number (that step's Program and op records)",
    )
    export.add_argument("--device", help=_DEVICE_HELP)
    _add_by(
        export,
        "csv only: op (default: XProf's records) or layer (one line per layer of the "
        "--step selection, the Program first)",
    )
    export.add_argument(
        "--depth",
        type=_depth,
        metavar="N",
        help="with --by layer: layers down to depth N (1: the top-level layers; default: all)",
    )
    export.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help="processes that analyze the hosts of a run folder (default: one per idle core "
        f"when {PARALLEL_MIN_CORES} or more are idle and its hosts are {PARALLEL_MIN_MB} MB or "
        "more together, else 1)",
    )
    export.add_argument(
        "--dask",
        metavar="SCHEDULER",
        help="convert every host (of a file, run or whole logdir) on a Dask cluster: a "
        "scheduler address or 'local'; results go to --cache-dir",
    )
    export.add_argument(
        "--cache-dir",
        help="write converted hosts here (outside the logdir) for `tensorboard "
        "--roofline_cache_dir`",
    )
    export.set_defaults(func=_export)

    summary = sub.add_parser("summary", help="print a readable summary of a profile's roofline")
    summary.add_argument("path")
    summary.add_argument("--host")
    summary.add_argument("--top", type=int, default=10, help="number of ops to list")
    summary.add_argument("--output", "-o")
    summary.add_argument("--peaks", help=_PEAKS_HELP)
    summary.add_argument("--device", help=_DEVICE_HELP)
    _add_by(
        summary,
        "op (default): the program and its top ops; layer: the layer tree (name "
        "scopes, module paths), each layer's roofline",
    )
    summary.add_argument(
        "--depth",
        type=_depth,
        metavar="N",
        help=f"with --by layer: layers down to depth N (default {DEFAULT_LAYER_DEPTH})",
    )
    summary.add_argument(
        "--step",
        default="total",
        help="with --by layer: total (default), average or a step number",
    )
    summary.set_defaults(func=_summary)

    comp = sub.add_parser(
        "compare", help="compare two profiles, runs, hosts or steps op by op (B against A)"
    )
    comp.add_argument(
        "a", help="baseline: a profile file (.xplane.pb, PyTorch trace) or a run folder"
    )
    comp.add_argument(
        "b", help="candidate: a profile file (.xplane.pb, PyTorch trace) or a run folder"
    )
    for side in ("a", "b"):
        comp.add_argument(f"--{side}-host", help=f"one host of {side.upper()} (default: all)")
        comp.add_argument(
            f"--{side}-step", help=f"total (default), average or a step number of {side.upper()}"
        )
    comp.add_argument("--format", choices=("table", "json", "csv"), default="table")
    comp.add_argument("--top", type=int, default=20, help="ops in the table (default 20)")
    comp.add_argument("--output", "-o")
    comp.add_argument("--peaks", help=_PEAKS_HELP)
    comp.add_argument(
        "--fail-if-slower",
        type=_percent_limit,
        metavar="PCT",
        help="exit with status 1 when B's program time per step is more than PCT%% above A's "
        "(a finite percentage, 0 or more)",
    )
    comp.set_defaults(func=_compare)

    calibrate = sub.add_parser(
        "calibrate", help="measure this machine's peak FLOP/s and memory bandwidth (for --peaks)"
    )
    calibrate.add_argument("--output", "-o", help="write the peaks JSON here")
    calibrate.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    calibrate.set_defaults(func=_calibrate)

    demo = sub.add_parser("demo", help="generate demo profiles and open them in TensorBoard")
    demo.add_argument("--logdir", default="demo_logdir", help="where to write the demo profiles")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=6006)
    demo.add_argument(
        "--no-serve", action="store_true", help="only write the profiles and print a summary"
    )
    demo.set_defaults(func=_demo)
    return parser


def _fail(message: str) -> int:
    """The one line of a failure, with what a profile named shown, not obeyed."""
    print(f"tb-roofline: error: {terminal_safe(message or 'failed')}", file=sys.stderr)
    return EXIT_BAD_INPUT


# Set (to anything) to leave glibc's heap and Python's cycle collector as they are (heap.py):
# benchmarks compare with and without.
KEEP_HEAP_ENV = "TB_ROOFLINE_KEEP_HEAP"
# Environment numpy's BLAS reads when numpy is first imported: one thread, for the commands
# that multiply no matrices (idle BLAS threads spin: ~0.1 CPU s of each start-up); not for
# `calibrate`, which measures the machine's FLOP/s, nor `demo`, whose TensorBoard may.
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


# The commands that convert profiles (`demo`, which serves TensorBoard, keeps its usual exit).
CONVERSIONS = (_export, _summary, _compare)
EXIT_FLUSH_FAILED = 120  # CPython's exit status when flushing standard output at exit fails


def main(argv: list[str] | None = None) -> int:
    """The command's exit status (a caller in its own process: a test, a script)."""
    return _run(build_parser().parse_args(argv))


def run() -> None:
    """The ``tb-roofline`` console command. After a conversion, the process ends without the
    interpreter's teardown (freeing every module's and array's objects one by one: 20-30 ms
    of each ``export`` of a pod, more than its rendering) once what it wrote is flushed; its
    output file is closed by then, its worker processes end with it (``watch_server``).
    A conversion on Dask keeps the teardown: the cluster's clients and finalizers have it."""
    args = build_parser().parse_args()
    code = _run(args)
    if args.func not in CONVERSIONS or getattr(args, "dask", None):
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe or a full disk: as the interpreter's own exit would say
        code = code or EXIT_FLUSH_FAILED
    os._exit(code)


def _run(args: argparse.Namespace) -> int:
    if args.func in CONVERSIONS and "numpy" not in sys.modules:
        for name, value in ONE_BLAS_THREAD.items():
            os.environ.setdefault(name, value)
    tuned = args.func in CONVERSIONS and not os.environ.get(KEEP_HEAP_ENV)
    if tuned:
        reuse_freed_memory()
    try:
        with cycles_collected_rarely() if tuned else contextlib.nullcontext():
            return args.func(args)
    except RooflineError as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # standard output on a full disk, ...: one line, not a traceback
        if exc.filename is None:  # stdout: what is still buffered must not fail again at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return _fail(f"standard output: cannot write ({exc.strerror or exc})")
        return _fail(f"{exc.filename}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    run()
