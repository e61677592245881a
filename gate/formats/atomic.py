"""Atomic file replacement and the lock that serializes baseline writers.

A write goes to a hidden ``.<name>.<random>.tmp`` in the target's folder, fsynced and ``os.replace``d:
readers see the old file or the new one. A killed writer's temp file never matches ``*.msgpack.zst``;
``write_baseline`` deletes those of its target under the lock. The lock is ``flock`` on the folder (no
lock file to litter the repository), else a byte-range lock on ``.parity-gate.lock``, else that file
created exclusively with its owner's pid, so a lock left by a killed process is taken over.
"""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
try:
    import msvcrt
except ImportError:  # POSIX
    msvcrt = None  # type: ignore[assignment]

TEMP_SUFFIX = ".tmp"
LOCK_FILE = ".parity-gate.lock"
_POLL = 0.01  # seconds between tries where the lock cannot block
_local = threading.local()


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:  # some filesystems refuse fsync on a directory; the rename still happened
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temp file in the same folder, fsync, os.replace)."""
    path = Path(path)
    directory = str(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def remove_stale_temps(path: str | os.PathLike[str]) -> None:
    """Delete temp files that killed writers of ``path`` left behind. Only safe while no writer of
    ``path`` can be running: call it under ``baseline_lock``."""
    path = Path(path)
    for tmp in path.parent.glob(glob.escape(f".{path.name}.") + "*" + TEMP_SUFFIX):
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def directory_lock(directory: str | os.PathLike[str]) -> Iterator[None]:
    """An exclusive lock on ``directory`` for the duration of the block (re-entrant per thread)."""
    held: dict[str, int] = _local.__dict__.setdefault("held", {})
    key = os.path.realpath(directory)
    if key in held:
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    release = _acquire(key)
    held[key] = 1
    try:
        yield
    finally:
        del held[key]
        release()


def _acquire(directory: str) -> Callable[[], None]:
    if fcntl is not None:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        return lambda: os.close(fd)  # closing releases the flock
    path = os.path.join(directory, LOCK_FILE)
    if msvcrt is not None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                break
            except OSError:
                time.sleep(_POLL)

        def unlock() -> None:
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
            os.close(fd)

        return unlock
    return _exclusive_file(path)


def _exclusive_file(path: str) -> Callable[[], None]:
    """The last resort: a lock file created with O_EXCL; a lock whose owner is dead is taken over."""
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            if _owner_dead(path):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            else:
                time.sleep(_POLL)
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return lambda: os.unlink(path)


def _owner_dead(path: str) -> bool:
    try:
        with open(path, encoding="ascii") as f:
            pid = int(f.read() or "0")
        age = time.time() - os.stat(path).st_mtime
    except (OSError, ValueError):
        return False  # gone, or being written right now
    if pid <= 0:
        return age > 60  # its creator died before writing its pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def baseline_lock(path: str | os.PathLike[str]) -> contextlib.AbstractContextManager[None]:
    """The lock writers of ``path`` hold (its folder's flock)."""
    return directory_lock(Path(path).parent)
