"""The C heap of the gate's processes: memory given back before a worker starts, and where a worker
faults fresh memory in on huge pages.

glibc keeps freed blocks below its mmap threshold inside the heap; ``malloc_trim(0)`` returns them so
the gate does not hold them while a worker runs beside it (a no-op without that call).

``worker_env`` asks glibc (2.35+, ``glibc.malloc.hugetlb=1``) to advise transparent huge pages for a
worker, keeping a value the caller set. ``huge_pages`` decides per stretch of the run: a worker's first
huge pages cost the kernel a compaction of memory just freed elsewhere, which pays only once a capture
faults in gigabytes of marked values. So the shipped session runs on 4 KiB pages, and a capture on
huge pages from ``HUGE_CAPTURE_BYTES`` of marked values."""

from __future__ import annotations

import contextlib
import ctypes
import sys
from collections.abc import Callable, Iterator, Mapping

TUNABLES = "GLIBC_TUNABLES"
HUGE_PAGES = "glibc.malloc.hugetlb"
HUGE_CAPTURE_BYTES = 2 * 2**30  # marked values from which a capture faults in on huge pages
_SET_THP_DISABLE, _GET_THP_DISABLE = 41, 42  # prctl(2) options, Linux 3.15 and later


def trim() -> bool:
    """Release the heap's free pages; False where there is no ``malloc_trim``."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        release = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    release(0)
    return True


def worker_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a worker process, with glibc's huge-page tunable unless the caller set it."""
    out = dict(env)
    if not sys.platform.startswith("linux"):
        return out
    parts = [p for p in out.get(TUNABLES, "").split(":") if p]
    if not any(p.partition("=")[0] == HUGE_PAGES for p in parts):
        out[TUNABLES] = ":".join([*parts, f"{HUGE_PAGES}=1"])
    return out


def capture_pages(marked_bytes: int) -> bool:
    return marked_bytes >= HUGE_CAPTURE_BYTES


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    call.restype = ctypes.c_int
    return call


@contextlib.contextmanager
def huge_pages(allowed: bool) -> Iterator[bool]:
    """Transparent huge pages ``allowed`` or not for this process within the block
    (``PR_SET_THP_DISABLE``); yields whether the setting took."""
    call = _prctl()
    zero = ctypes.c_ulong(0)
    before = -1 if call is None else call(_GET_THP_DISABLE, zero, zero, zero, zero)
    refuse = ctypes.c_ulong(int(not allowed))
    if call is None or before < 0 or call(_SET_THP_DISABLE, refuse, zero, zero, zero):
        yield False
        return
    try:
        yield True
    finally:
        call(_SET_THP_DISABLE, ctypes.c_ulong(before), zero, zero, zero)
