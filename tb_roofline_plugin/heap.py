"""glibc's heap and Python's cycle collector, tuned for a conversion's large short-lived
arrays and many small objects (elsewhere: left alone).

A conversion allocates and frees hundreds of arrays of megabytes. Above glibc's mmap
threshold each one is a fresh mapping whose pages the kernel zeroes on first touch (a fifth
of perf's samples of a ~100 MB TPU export); kept in the heap, a freed array's pages are
reused by the next: 24 % fewer page faults on the ~100 MB CPU profile, 13 % on the TPU one.
``release_freed_memory`` still hands freed pages back where memory matters (after a line's
pieces are joined, before the CPU step cells are made).

A conversion's objects die by reference counting, but it makes tens of thousands of small
ones (a step's StepInfo, tuples): the cycle collector's passes over them and over every
imported module's objects were 0.07-0.08 s of a ~100 MB export, 0.03 s when rarer
(``cycles_collected_rarely``).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
from collections.abc import Callable, Iterator

# mallopt parameters (malloc.h) and the values set for a conversion.
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD_BYTES = 1 << 30  # free memory kept at the heap's top before it is returned
TOP_PAD_BYTES = 64 << 20  # the heap grows by at least this much at a time
# Allocations between two collections of the youngest generation (Python's default: 700).
YOUNG_COLLECTION_ALLOCATIONS = 100_000


def _libc() -> ctypes.CDLL | None:
    """The C library, when it is glibc (None elsewhere: macOS, musl, Windows)."""
    try:
        libc = ctypes.CDLL(None)
    except (OSError, TypeError):  # TypeError: Windows' CDLL(None)
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


_LIBC = _libc()


def _function(name: str) -> Callable[..., int] | None:
    return getattr(_LIBC, name) if _LIBC is not None else None


def release_freed_memory() -> None:
    """Hands the pages of freed heap memory back to the system. A line's pieces (a few MB
    each) live in the heap, not in pages of their own: once joined, their holes would stay
    resident beside the joined column (on the 1 GB profile, ~0.5 GB at the peak)."""
    trim = _function("malloc_trim")
    if trim is not None:
        trim(0)


def reuse_freed_memory() -> bool:
    """Keeps freed arrays of up to MMAP_THRESHOLD_BYTES in the heap for the next ones, for
    the rest of the process (the CLI's conversions; TensorBoard's process is left as it
    is). False where the C library is not glibc."""
    mallopt = _function("mallopt")
    if mallopt is None:
        return False
    settings = (
        (_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
        (_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
        (_M_TOP_PAD, TOP_PAD_BYTES),
    )
    return all(mallopt(parameter, value) == 1 for parameter, value in settings)


@contextlib.contextmanager
def cycles_collected_rarely() -> Iterator[None]:
    """Within it (a CLI conversion, from before its modules are imported): the youngest
    generation collected every YOUNG_COLLECTION_ALLOCATIONS allocations, so the older ones,
    which hold every module's objects, are rarely traversed; cycles are still collected.
    The thresholds are put back after: a caller of ``cli.main`` in its own process (a test
    run) keeps its collector's timing."""
    previous = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_ALLOCATIONS, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)
