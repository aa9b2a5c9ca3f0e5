"""Work done in threads where most of it runs in C without the GIL: the compiled decoder's
passes over a profile's lines (``_wire`` releases the GIL while it walks them), so the
cores or streams of one host decode at once on a machine with idle cores."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

THREADS_MIN_BYTES = 8_000_000  # lines of a host worth reading in threads (their start-up)

T = TypeVar("T")
R = TypeVar("R")


def idle_cores() -> int:
    """The cores this process may run on (threads beyond them only take turns)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


RUNNING_LOOKS = 3  # looks at the running tasks; their least is what keeps running


def running_elsewhere(stat_path: str = "/proc/stat") -> float:
    """Tasks running on the machine now besides this one: the least of a few looks at
    Linux's ``procs_running`` (which counts the looking thread too). The load average, where
    there is no /proc, is the last minute's: it still counts work that has ended (a command
    run just before, or the previous process of a benchmark) as busy cores."""
    looks = []
    try:
        for _ in range(RUNNING_LOOKS):
            with open(stat_path, "rb") as stat:
                field = next(ln for ln in stat if ln.startswith(b"procs_running "))
            looks.append(int(field.split()[1]) - 1)
    except (OSError, StopIteration, ValueError, IndexError):
        return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return float(max(min(looks), 0))


def thread_map(work: Callable[[T], R], items: Sequence[T], threads: int | None = None) -> list[R]:
    """``[work(item) for item in items]``, the items shared by this thread and up to
    ``threads - 1`` others (default: one per core); the first item's error (in item order)
    is raised, as a loop would."""
    count = min(len(items), idle_cores() if threads is None else threads)
    if count < 2:
        return [work(item) for item in items]
    results: list = [None] * len(items)
    errors: list[BaseException | None] = [None] * len(items)
    taken = iter(range(len(items)))
    lock = threading.Lock()

    def run() -> None:
        while True:
            with lock:
                i = next(taken, None)
            if i is None:
                return
            try:
                results[i] = work(items[i])
            except BaseException as exc:  # raised in its turn by the caller's thread
                errors[i] = exc

    helpers = [threading.Thread(target=run, daemon=True) for _ in range(count - 1)]
    for helper in helpers:
        helper.start()
    run()
    for helper in helpers:
        helper.join()
    for error in errors:
        if error is not None:
            raise error
    return results
