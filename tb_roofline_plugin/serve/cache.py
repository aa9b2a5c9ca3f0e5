"""A memory-bounded LRU cache with single flight, for converted profiles.

Keys carry the files' size and mtime, so a changed file is a new key. Concurrent
requests for the same missing key wait for one computation; errors are cached like
values (a corrupt file stays corrupt until it changes), so they are not re-parsed
on every request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any, Callable, Generic, Hashable, TypeVar

V = TypeVar("V")


class DoNotCache(Exception):
    """Raised by ``compute`` to fail this call (with ``error``) without caching the failure.

    For failures that say nothing about the file's content, such as a read error that
    goes away when permissions are fixed, or a file that changed while it was read.
    """

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class Transient:
    """Returned by ``compute``: give ``value`` to this call's waiters without caching it."""

    def __init__(self, value: object):
        self.value = value


class _Failure:
    """A cached exception; re-raised to every caller."""

    def __init__(self, error: BaseException):
        self.error = error


class SingleFlightCache(Generic[V]):
    """``get(key, compute, size_of)``: computed once per key, evicted least recently used."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max(int(max_bytes), 0)
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._pending: dict[Hashable, Future] = {}
        self._bytes = 0
        self.computations = 0  # how many times `compute` ran (tests and stats)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def get(
        self,
        key: Hashable,
        compute: Callable[[], V | Transient],
        size_of: Callable[[V], int] = lambda v: 0,
    ) -> V:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._unwrap(self._entries[key][0])
            waiting = self._pending.get(key)
            if waiting is None:
                future: Future = Future()
                self._pending[key] = future
                self.computations += 1
        if waiting is not None:
            return self._unwrap(waiting.result())
        store = True
        try:
            value: Any = compute()
            if isinstance(value, Transient):
                value, store = value.value, False
            size = size_of(value) if store else 0
        except DoNotCache as exc:  # re-raised to every waiter, not kept
            value, size, store = _Failure(exc.error), 0, False
        except Exception as exc:  # cached and re-raised to every waiter
            value, size = _Failure(exc), 1024
        with self._lock:
            self._pending.pop(key, None)
            if store:
                self._store(key, value, size)
        future.set_result(value)
        return self._unwrap(value)

    def _store(self, key: Hashable, value: object, size: int) -> None:
        if size > self.max_bytes:
            return  # too big to keep; the caller still gets it
        self._entries[key] = (value, size)
        self._bytes += size
        while self._bytes > self.max_bytes and self._entries:
            _, (_, old) = self._entries.popitem(last=False)
            self._bytes -= old

    @staticmethod
    def _unwrap(value: object):
        if isinstance(value, _Failure):
            raise value.error
        return value
