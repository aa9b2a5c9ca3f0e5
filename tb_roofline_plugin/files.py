"""Reading local files a hostile logdir may hold: only regular files, never more than a limit.

A name in a logdir may be a link to ``/dev/zero`` (``stat`` says 0 bytes, a read never
ends), a FIFO (``open`` blocks until a writer comes) or a gzip bomb (a few MB that unpack
to GBs). So a file is ``stat``-ed before it is opened, opened non-blocking and ``fstat``-ed
again (it may have been swapped meanwhile), and read or unpacked up to its limit plus one
byte, which tells a file past the limit without reading it all.
"""

from __future__ import annotations

import mmap
import os
import stat
import threading
import zlib
from typing import BinaryIO

from .errors import ProfileError, UnreadableProfile
from .metadata import DEFAULT_MAX_FILE_MB

DEFAULT_MAX_BYTES = int(DEFAULT_MAX_FILE_MB * 1e6)
GZIP_MAGIC = b"\x1f\x8b"
_CHUNK_BYTES = 1 << 20  # unpacked at a time
# From this size on a file read ``releasable`` is read into pages of its own, which the
# reader hands back as it goes (``release_range``) instead of all at the end.
RELEASABLE_MIN_BYTES = 64 << 20
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class FileTooLarge(ProfileError):
    """A file (or what it unpacks to) is larger than the limit it is read under."""

    status = 413


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def limit_text(max_bytes: int) -> str:
    return f"the {max_bytes / 1e6:g} MB limit"


def not_regular(mode: int) -> str | None:
    """Why a file of this ``st_mode`` is not read ("not a regular file (a FIFO)"), or None."""
    if stat.S_ISREG(mode):
        return None
    kind = next((what for test, what in _KINDS if test(mode)), "a special file")
    return f"not a regular file ({kind}); not read"


def check_regular(path: str) -> os.stat_result:
    """``os.stat`` (links followed) of a regular file; ProfileError naming it otherwise."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UnreadableProfile(path, "cannot read: no such file") from None
    except OSError as exc:
        raise UnreadableProfile(path, f"cannot be read ({exc.strerror or exc})") from None
    problem = not_regular(st.st_mode)
    if problem:
        raise ProfileError(path, problem)
    return st


def is_regular(path: str) -> bool:
    """Whether ``path`` (links followed) is a regular file; never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


_FLAGS = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


def _opener(name: str, flags: int) -> int:
    """Opens non-blocking (a FIFO swapped in after the stat does not block) and refuses
    what ``fstat`` says is no regular file."""
    fd = os.open(name, flags | _FLAGS)
    problem = not_regular(os.fstat(fd).st_mode)
    if problem:
        os.close(fd)
        raise _Swapped(problem)
    return fd


class _Swapped(OSError):
    """The file was no regular file when opened (it was at the stat before)."""


def _open_regular(name: str) -> BinaryIO:
    """The regular file ``name`` opened: stat-ed first (a FIFO or a device is never opened)."""
    check_regular(name)
    try:
        return open(name, "rb", opener=_opener)
    except _Swapped as exc:
        raise ProfileError(name, str(exc)) from None
    except OSError as exc:
        raise UnreadableProfile(name, f"cannot be read ({exc.strerror or exc})") from None


def read_regular(path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of a local regular file of at most ``max_bytes``; ProfileError naming it
    (FileTooLarge past the limit) otherwise. At most ``max_bytes + 1`` bytes are read."""
    data = _read_regular(path, max_bytes, paged=False)
    assert isinstance(data, bytes)  # paged=False: never a mapping
    return data


def read_releasable(
    path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES
) -> bytes | mmap.mmap:
    """``read_regular``, a file of RELEASABLE_MIN_BYTES or more in an anonymous mapping
    whose pages ``release_range`` hands back part by part (bytes-like, as bytes are); the
    bytes ``read_ahead`` read of it, where it did."""
    ahead = _ahead.pop((os.fspath(path), max_bytes), None)
    if ahead is not None:
        reader, read = ahead
        reader.join()
        if read:
            return read[0]
    return _read_regular(path, max_bytes, paged=True)


# (path, max_bytes) -> the thread reading it ahead, and the bytes once read (none: failed).
_ahead: dict[tuple[str, int], tuple[threading.Thread, list]] = {}


def read_ahead(path: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Starts ``read_releasable(path)`` in a thread, whose bytes the next call of it takes:
    a command's imports (numpy's ~0.15 s hold the GIL) and the read (a copy from the page
    cache, without the GIL: 0.02-0.2 s for 100 MB) run at once. A read that fails leaves
    nothing: the read proper fails again and says why."""
    key = (os.fspath(path), max_bytes)
    read: list = []

    def reader() -> None:
        try:
            read.append(_read_regular(key[0], max_bytes, paged=True))
        except Exception:  # the read proper reports it, once, in the caller's thread
            pass

    thread = threading.Thread(target=reader, daemon=True)
    _ahead[key] = (thread, read)
    thread.start()


def _read_regular(path: str | os.PathLike, max_bytes: int, paged: bool) -> bytes | mmap.mmap:
    name = os.fspath(path)
    with _open_regular(name) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise FileTooLarge(name, f"{_mb(size)} is larger than {limit_text(max_bytes)}")
            # A buffer of what the file holds, not of the limit.
            paged = paged and size >= RELEASABLE_MIN_BYTES and _CAN_RELEASE
            data = _read_into_pages(handle, size) if paged else handle.read(size)
            more = [data]
            total = len(data)
            while total <= max_bytes:  # it may have grown since the fstat
                chunk = handle.read(min(_CHUNK_BYTES, max_bytes + 1 - total))
                if not chunk:
                    break
                more.append(chunk)
                total += len(chunk)
        except OSError as exc:
            raise UnreadableProfile(name, f"cannot be read ({exc.strerror or exc})") from None
    if total > max_bytes:
        raise FileTooLarge(name, f"more than {_mb(max_bytes)}, past {limit_text(max_bytes)}")
    return data if len(more) == 1 else b"".join(more)


_CAN_RELEASE = all(
    hasattr(mmap, name) for name in ("MADV_DONTNEED", "MAP_PRIVATE", "MAP_ANONYMOUS")
)


def _read_into_pages(handle: BinaryIO, size: int) -> bytes | mmap.mmap:
    """``size`` bytes of ``handle`` in a private anonymous mapping (bytes if the file shrank):
    private, so that a page handed back is freed, not kept as shared memory; in huge pages
    where the system grants them on advice (a 100 MB file is 25,000 page faults fewer)."""
    pages = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        pages.madvise(mmap.MADV_HUGEPAGE)
    filled = 0
    with memoryview(pages) as view:
        while filled < size:
            count = handle.readinto(view[filled:])  # type: ignore[attr-defined]  # open()'s
            if not count:
                break
            filled += count
    return pages if filled == size else pages[:filled]


def release_range(data: bytes | mmap.mmap, start: int, end: int) -> bool:
    """Hands back the pages wholly inside ``data[start:end]`` when ``data`` is a releasable
    read's mapping, whose bytes there are never read again (they read as zeros after);
    False (nothing done) for bytes."""
    if not isinstance(data, mmap.mmap) or not _CAN_RELEASE:
        return False
    first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
    last = min(end, len(data)) // mmap.PAGESIZE * mmap.PAGESIZE
    if last > first:
        data.madvise(mmap.MADV_DONTNEED, first, last - first)
    return True


def head_regular(path: str | os.PathLike, count: int) -> bytes:
    """A local regular file's first ``count`` bytes; empty when it is none or unreadable."""
    try:
        with _open_regular(os.fspath(path)) as handle:
            return handle.read(count)
    except (ProfileError, OSError):
        return b""


def gunzip(data: bytes, path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The unpacked bytes of gzip ``data`` (every member), at most ``max_bytes`` of them:
    FileTooLarge naming both sizes past that, ProfileError when corrupt or truncated."""
    out: list[bytes] = []
    total = 0
    rest = data
    try:
        while rest:
            unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
            pending = rest
            while not unpacker.eof:
                chunk = unpacker.decompress(pending, min(_CHUNK_BYTES, max_bytes + 1 - total))
                pending = unpacker.unconsumed_tail
                total += len(chunk)
                out.append(chunk)
                if total > max_bytes:
                    raise FileTooLarge(
                        path,
                        f"unpacks to more than {_mb(max_bytes)} ({_mb(len(data))} compressed), "
                        f"past {limit_text(max_bytes)}",
                    )
                if not chunk and not pending:
                    raise ProfileError(
                        path, "truncated or corrupt gzip (the data ends inside a member)"
                    )
            rest = unpacker.unused_data.lstrip(b"\x00")  # members; trailing zero padding
            if rest and rest[:2] != GZIP_MAGIC:
                raise ProfileError(path, "truncated or corrupt gzip (data after the last member)")
    except zlib.error as error:
        raise ProfileError(path, f"truncated or corrupt gzip ({error})") from None
    return b"".join(out)
