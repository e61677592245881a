"""Atomic file replacement and the lock that serializes baseline writers.

``atomic_write_bytes`` writes a hidden temp file in the target's folder
(``.<name>.<random>.tmp``), fsyncs it, ``os.replace``s it over the target and fsyncs the
folder: readers see the old file or the new one, never a mix. A writer killed mid-way
leaves its temp file behind; such names never match ``*.msgpack.zst`` and readers ignore
them, and ``write_baseline`` deletes those of its target while it holds the lock.

``baseline_lock(path)`` takes ``flock`` on the baseline's folder (no lock files to litter
the repository); hold it around read-modify-write so concurrent updates do not lose each
other's entries. It is re-entrant within a thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

TEMP_SUFFIX = ".tmp"
_local = threading.local()


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on a directory; the rename still happened
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` atomically (temp file in the same folder, fsync, os.replace)."""
    path = Path(path)
    directory = str(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def remove_stale_temps(path: str | os.PathLike) -> int:
    """Delete temp files that killed writers of ``path`` left behind; returns how many.

    Only safe while no writer of ``path`` can be running: call it under ``baseline_lock``.
    """
    path = Path(path)
    removed = 0
    for tmp in path.parent.glob(glob.escape(f".{path.name}.") + "*" + TEMP_SUFFIX):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed += 1
    return removed


def atomic_write_text(path: str | os.PathLike, text: str, *, mode: int = 0o644) -> None:
    """``atomic_write_bytes`` for UTF-8 text (reports, summaries)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


@contextlib.contextmanager
def directory_lock(directory: str | os.PathLike) -> Iterator[None]:
    """Exclusive ``flock`` on ``directory`` for the duration of the block (re-entrant per thread)."""
    held: dict[str, int] = _local.__dict__.setdefault("held", {})
    key = os.path.realpath(directory)
    if key in held:
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    fd = os.open(key, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held[key] = 1
        try:
            yield
        finally:
            del held[key]
    finally:
        os.close(fd)  # releases the flock


def baseline_lock(path: str | os.PathLike) -> contextlib.AbstractContextManager[None]:
    """The lock writers of ``path`` hold (its folder's flock)."""
    return directory_lock(Path(path).parent)
