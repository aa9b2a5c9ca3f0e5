"""What the conversions in flight are doing, for the tab's loading status.

A big profile takes seconds to read, analyse and render; the tab polls the ``progress``
route meanwhile and shows the stage and the time so far. Each piece of work is a ``Task``
under a key (a host's file, or a run and host being combined or rendered) that moves through
``STAGES`` and is gone when it ends; nothing is kept once the work is done.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Hashable, Iterable, Iterator
from typing import Callable

READING = "reading"  # the file's bytes, and decoding them (XSpace) or parsing them (JSON)
ANALYSING = "analysing"  # ops, steps and costs of the decoded profile
CONVERTING = "converting"  # reading and analysing in a worker process (no finer stage known)
COMBINING = "combining"  # all hosts of a run as one
RENDERING = "rendering"  # the roofline model and the response text
STAGES = (READING, ANALYSING, CONVERTING, COMBINING, RENDERING)


class Task:
    """One piece of work in flight: its key, its stage and when it started."""

    def __init__(self, key: Hashable, stage: str, started_s: float) -> None:
        self.key = key
        self.stage = stage
        self.started_s = started_s

    def enter(self, stage: str) -> None:
        """Moves the work on to ``stage`` (one of STAGES)."""
        self.stage = stage


class Progress:
    """The tasks in flight, by key; safe to use from every request thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._tasks: list[Task] = []

    def start(self, key: Hashable, stage: str) -> Task:
        """A task in flight from now, at ``stage``, until ``end``."""
        task = Task(key, stage, self._clock())
        with self._lock:
            self._tasks.append(task)
        return task

    def end(self, task: Task) -> None:
        with self._lock:
            if task in self._tasks:
                self._tasks.remove(task)

    @contextlib.contextmanager
    def task(self, key: Hashable, stage: str) -> Iterator[Task]:
        """A task for the ``with`` block, starting at ``stage``; it ends with the block."""
        task = self.start(key, stage)
        try:
            yield task
        finally:
            self.end(task)

    def of(self, keys: Iterable[Hashable]) -> dict:
        """What the work under ``keys`` is doing: ``busy``, ``elapsed_s`` (since the oldest
        task in flight began), ``stages`` (how many tasks are at each stage, in STAGES
        order) and ``stage`` (the furthest stage reached, for a one-word status)."""
        wanted = set(keys)
        with self._lock:
            mine = [(t.stage, t.started_s) for t in self._tasks if t.key in wanted]
        if not mine:
            return {"busy": False, "stage": "", "elapsed_s": 0.0, "stages": {}}
        counts = {s: n for s in STAGES if (n := sum(stage == s for stage, _ in mine))}
        return {
            "busy": True,
            "stage": max(counts, key=STAGES.index),
            "elapsed_s": max(self._clock() - min(start for _, start in mine), 0.0),
            "stages": counts,
        }
