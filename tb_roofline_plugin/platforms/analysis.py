"""From a decoded profile to OpStats: picks the platform and reads its ops and steps."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar, cast

from google.protobuf.message import DecodeError

from ..errors import ProfileError
from ..hlo.modules import program_modules, program_names
from ..metadata import PARALLEL_MIN_CORES, PARALLEL_MIN_MB
from ..ops.op_metrics import empty_db
from ..ops.op_stats import Diagnostics, HostsCombiner, OpStats
from ..ops.selection import check_device
from ..peaks.perf_env import PerfEnv, RunEnvironment, finite_env
from ..xspace.discovery import file_head, host_name, is_trace_file
from ..xspace.profile_reader import GPU_PLANE, TPU_CORE_PLANE, Profile, decode_profile, read_profile
from .in_threads import idle_cores, running_elsewhere

if TYPE_CHECKING:  # concurrent.futures only where hosts are analyzed in parallel
    from concurrent.futures import Future, ProcessPoolExecutor

NO_OPS = (
    "This profile has no TPU or GPU device planes and no XLA op events on the host "
    "(planes: {planes}); there is nothing to put on a roofline."
)
NO_DEVICE_OPS = (
    "The {kind} planes of this profile have no XLA op events (the devices ran nothing while "
    "profiling, or ran code without HLO ops); there is nothing to put on a roofline."
)
CPU_COMPUTED = (
    "CPU roofline computed by tb_roofline_plugin from the HLO cost model (XProf shows no "
    "roofline for CPU profiles)."
)
NO_XLA_PROGRAMS = (
    "This profile has {what} but no XLA programs: the framework ran its own kernels "
    "(e.g. TensorFlow without XLA), which carry no HLO ops to cost, so {them} have times "
    "but no FLOPs or bytes. Compile the step with XLA to get a roofline: "
    "`tf.function(jit_compile=True)` in TensorFlow, `jax.jit` in JAX."
)
NO_PEAKS = (
    "No peaks known for this device: rates and intensities are shown but bound_by is "
    "Unknown. Give peaks with `tb-roofline export --peaks NAME|FILE` (see `tb-roofline "
    "calibrate`) or `tensorboard --roofline_peaks NAME|FILE`."
)


def analyze_profile(
    profile: Profile, host: str, peaks: PerfEnv | None = None, device: int | None = None
) -> OpStats:
    """OpStats of one host. ``peaks`` (user/table/calibration) replace the profile's;
    ``device`` (None: all) keeps one of its devices (``OpStats.devices``; BadDevice else).

    Each platform's reader is imported when a profile needs it (a command's start-up).
    """
    if profile.planes_matching(GPU_PLANE):
        from .gpu import gpu_op_stats

        modules, problems = program_modules(profile)
        stats = gpu_op_stats(profile, host, modules, device)
        stats.notes.extend(problems)
    elif profile.planes_matching(TPU_CORE_PLANE):
        from .tpu import tpu_op_stats

        # libtpu costs the ops; the modules give their dtypes and shapes (an undecodable one:
        # its ops' own HLO lines give them).
        modules, _ = program_modules(profile)
        stats = tpu_op_stats(profile, host, device, modules)
    else:
        from .cpu import cpu_op_stats

        modules, problems = program_modules(profile)
        stats = cpu_op_stats(profile, host, modules, peaks, device)
        stats.notes.extend(problems)
        if stats.run_env.active_core_count == 0 and stats.steps:
            stats.diagnostics.info.append(
                NO_XLA_PROGRAMS.format(what="host steps", them="the steps")
            )
            stats.program_names = program_names(profile)
            return stats
        if stats.run_env.active_core_count == 0:
            planes = ", ".join(profile.all_plane_names) or "none"
            return OpStats(
                hosts=[host],
                run_env=RunEnvironment(hardware_type="CPU_ONLY"),
                perf_env=PerfEnv(),
                all_db=empty_db(),
                diagnostics=Diagnostics(info=[NO_OPS.format(planes=planes)]),
            )
        stats.diagnostics.info.append(CPU_COMPUTED)
    if stats.run_env.hardware_type in ("TPU", "GPU") and not (stats.all_db.occurrences > 0).any():
        if stats.run_env.hardware_type == "GPU" and stats.unattributed is not None:
            what = "GPU kernels" + (" and steps" if stats.steps else "")
            them = "the kernels" + (" and steps" if stats.steps else "")
            stats.diagnostics.info.append(NO_XLA_PROGRAMS.format(what=what, them=them))
        else:
            stats.diagnostics.info.append(NO_DEVICE_OPS.format(kind=stats.run_env.hardware_type))
    stats.perf_env = finite_env(stats.perf_env)
    stats.program_names = program_names(profile)
    if peaks is not None:
        stats = replace(stats, perf_env=peaks)
    if not stats.perf_env.known:
        stats.diagnostics.warnings.append(NO_PEAKS)
    return stats


def analyze_bytes(
    data: bytes, path: str, peaks: PerfEnv | None = None, device: int | None = None
) -> OpStats:
    """OpStats of a profile's bytes; malformed content is a ProfileError naming ``path``.

    Values no real profile has (overflowing times or shapes, undecodable nested messages)
    surface from deep in the analysis as ValueError/OverflowError/DecodeError; they are the
    file's problem, so they become one-line ProfileErrors here.
    """
    return analyze_decoded(decode_profile(data, path), path, peaks, device)


def analyze_decoded(
    profile: Profile, path: str, peaks: PerfEnv | None = None, device: int | None = None
) -> OpStats:
    """``analyze_profile`` with malformed content as a one-line ProfileError naming ``path``."""
    try:
        return analyze_profile(profile, host_name(path), peaks, device)
    except (ValueError, OverflowError, ArithmeticError, DecodeError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ProfileError(path, f"malformed profile content ({detail})") from None


def analyze_file(
    path: str | os.PathLike, peaks: PerfEnv | None = None, device: int | None = None
) -> OpStats:
    """OpStats of a local file, an XSpace profile or a PyTorch profiler trace (by its name,
    else by its first bytes); an XSpace file's bytes are let go as soon as the lines are read.
    ``device``: one of the host's devices (None: all; a PyTorch trace has no choice)."""
    if is_trace_file(path, file_head(path)):
        check_device(device, [])
        from ..kineto import analyze_trace  # only for PyTorch traces: not imported otherwise

        return analyze_trace(path, peaks)
    profile = read_profile(path, release_lines=True)
    return analyze_decoded(profile, os.fspath(path), peaks, device)


def analyze_files(
    paths: Sequence[str | os.PathLike],
    peaks: PerfEnv | None = None,
    workers: int | None = None,
    start_method: str | None = None,
) -> OpStats:
    """All hosts of a run combined (one file per host), each merged in as it comes.

    ``workers`` (None: ``parallel_workers``) > 1 analyzes hosts in that many processes:
    this one and ``workers - 1`` others; the result is the same. ``start_method`` starts
    them (None: ``forkserver`` where there is one, else ``spawn``; ``fork`` is for callers
    that know their process has no threads, native ones included).
    """
    if workers is None:
        workers = parallel_workers(paths)
    combiner = HostsCombiner()
    for stats in _each_host(paths, peaks, workers, start_method):
        combiner.add(stats)
    return combiner.result()


T = TypeVar("T")
# The readers analyze_file may import: worker processes forked from a server have them.
READERS = (
    f"{__package__}.tpu",
    f"{__package__}.gpu",
    f"{__package__}.cpu",
    "tb_roofline_plugin.kineto",
    "tb_roofline_plugin.kineto.ops",
    "tb_roofline_plugin.kineto.trace_reader",
)
PARALLEL_MIN_BYTES = PARALLEL_MIN_MB * 1_000_000  # hosts of a run; below, one process is as fast


def parallel_workers(paths: Sequence[str | os.PathLike]) -> int:
    """Processes worth analyzing ``paths`` in: one per idle core (at most one per host)
    when there are several hosts of PARALLEL_MIN_BYTES or more together and at least
    PARALLEL_MIN_CORES idle cores, else 1. A core is idle when no other task runs on it now
    (``running_elsewhere``): on a busy machine more processes only share the same cores.
    On two cores a host's compiled passes already run in threads on both, and workers lost
    in every case measured (README, "Scale")."""
    if len(paths) < 2:
        return 1
    try:
        size = sum(os.path.getsize(p) for p in paths)
    except OSError:
        return 1  # the serial path reports the file
    if size < PARALLEL_MIN_BYTES:
        return 1
    idle = int(idle_cores() - running_elsewhere() + 0.5)
    return min(idle, len(paths)) if idle >= PARALLEL_MIN_CORES else 1


class _Failed:
    """Work that failed here ahead of its turn: raised when its turn comes."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def shared_in_order(
    count: int,
    here: Callable[[int], T],
    submit: Callable[[int], Future | None],
    outstanding: int,
) -> Iterator[T]:
    """The results of work 0..count-1 in order, done by worker processes and this one.

    Work goes out in order: to the workers (``submit(i)``, at most ``outstanding`` at a
    time; None: no worker is up yet) and, whenever the work due is not done yet, to this
    process (``here(i)``), so the workers' start-up costs no waiting. Work a worker could
    not do (its result is None, or it raised, or the pool broke) is done here. ``here``'s
    errors come in their turn, as in a serial loop.
    """
    from concurrent.futures import FIRST_COMPLETED, wait

    ready: dict[int, object] = {}
    running: dict[int, Future] = {}
    given = 0  # work before this has gone out
    broken = False
    for i in range(count):
        while i not in ready:
            while not broken and given < count and _unfinished(running) < outstanding:
                try:
                    future = submit(given)
                except Exception:  # a broken pool: the rest is done here
                    broken = True
                    break
                if future is None:  # not up yet: later
                    break
                running[given] = future
                given += 1
            future = running.get(i)
            if future is None:  # no worker has it: it is the next to go out
                given += 1
                ready[i] = _done_here(here, i)
            elif future.done():
                del running[i]
                try:
                    result = future.result()
                except Exception:
                    result = None
                ready[i] = _done_here(here, i) if result is None else result
            elif given < count:  # the next work, here, meanwhile
                given += 1
                ready[given - 1] = _done_here(here, given - 1)
            else:
                wait([future], return_when=FIRST_COMPLETED)
        result = ready.pop(i)
        if isinstance(result, _Failed):
            raise result.error
        yield cast(T, result)


def _unfinished(running: dict[int, Future]) -> int:
    return sum(not future.done() for future in running.values())


def _done_here(here: Callable[[int], T], i: int) -> T | _Failed:
    try:
        return here(i)
    except Exception as exc:  # raised in its turn, as a serial loop would
        return _Failed(exc)


class WorkerPool:
    """A process pool whose workers start in the background: ``submit`` gives None until
    they are up, so the caller works meanwhile (a fork server's first start, for one,
    takes as long as a fresh interpreter's imports, and blocks whoever starts it).
    Made stopped; ``start`` starts it."""

    def __init__(self, processes: int, start_method: str, preload: list[str]) -> None:
        self.processes = processes
        self.start_method = start_method
        self.preload = preload
        self._pool: ProcessPoolExecutor | None = None
        self._up = threading.Event()

    def start(self) -> WorkerPool:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context(self.start_method)
        if self.start_method == "forkserver":
            context.set_forkserver_preload(self.preload)  # workers forked with these loaded
        self._pool = ProcessPoolExecutor(
            self.processes, mp_context=context, initializer=watch_server, initargs=(os.getpid(),)
        )
        if self.start_method == "fork":  # in milliseconds, and only while no other thread runs
            self._start()
        else:
            threading.Thread(target=self._start, daemon=True).start()
        return self

    def _start(self) -> None:
        assert self._pool is not None
        try:
            for started in [self._pool.submit(os.getpid) for _ in range(self.processes)]:
                started.result()
        except Exception:  # a pool that cannot start: its submit says so
            pass
        self._up.set()

    def submit(self, fn: Callable, *args) -> Future | None:
        if self._pool is None or not self._up.is_set():
            return None
        return self._pool.submit(fn, *args)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        if self._pool is None:  # never started
            return
        self._up.wait()  # not while it starts
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def watch_server(server_pid: int) -> None:
    """A worker's initializer: end this worker when the process that made the pool ends,
    however it ends (``kill -9`` included). A fork server's workers are its children, not
    the server's, so the parent-death signal would not do; and a worker left behind keeps
    the fork server and the resource tracker alive too (they hold its pipes)."""
    threading.Thread(target=_exit_with, args=(server_pid,), daemon=True).start()


def _exit_with(pid: int) -> None:
    import select
    import time

    try:
        handle = os.pidfd_open(pid)  # Linux 5.3+: readable once the process has ended
    except ProcessLookupError:
        os._exit(0)
    except (AttributeError, OSError):  # elsewhere: look once a second
        while process_alive(pid):
            time.sleep(1.0)
    else:
        select.select([handle], [], [])
    os._exit(0)


def process_alive(pid: int) -> bool:
    """Whether a process of this machine with this id runs (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process of that number: assume ours is alive
        return True
    return True


def default_start_method() -> str:
    """``forkserver`` where there is one (workers forked from a process of their own, safe
    whatever threads the caller has), else ``spawn``."""
    import multiprocessing

    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _each_host(
    paths: Sequence[str | os.PathLike],
    peaks: PerfEnv | None,
    workers: int,
    start_method: str | None = None,
) -> Iterator[OpStats]:
    """``analyze_file`` of each path, in order; with workers, in ``workers - 1`` worker
    processes and this one (``shared_in_order``)."""
    if workers < 2 or len(paths) < 2:
        for path in paths:
            yield analyze_file(path, peaks)
        return
    start_method = start_method or default_start_method()
    if start_method == "fork":  # the first host here: forked workers have its readers
        yield analyze_file(paths[0], peaks)  # imported and its programs' op tables read
        paths = paths[1:]
    processes = min(workers, len(paths)) - 1
    if processes < 1:
        for path in paths:
            yield analyze_file(path, peaks)
        return
    pool = WorkerPool(processes, start_method, [__name__, *READERS]).start()
    try:
        yield from shared_in_order(
            len(paths),
            lambda i: analyze_file(paths[i], peaks),
            lambda i: pool.submit(_analyze_or_none, os.fspath(paths[i]), peaks),
            2 * processes,  # one running and one waiting per worker: none waits for work
        )
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _analyze_or_none(path: str, peaks: PerfEnv | None) -> OpStats | None:
    """A worker's ``analyze_file``; None for any failure (its error is made again in the
    parent: exceptions need not survive pickling)."""
    try:
        return analyze_file(path, peaks)
    except Exception:
        return None
