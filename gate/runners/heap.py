"""The C heap of the gate's processes: memory given back before a worker starts, and where a worker
faults fresh memory in on huge pages.

glibc keeps freed blocks below its mmap threshold (which grows to 32 MB as large blocks are freed)
inside the process's heap: after an export and a float64 reference, a share of the gate's resident
memory that it would hold while the ONNX Runtime worker runs beside it. ``malloc_trim(0)`` returns
those pages; where there is no such call (musl, macOS, Windows) this
does nothing.

A capture writes every marked value into fresh memory, and each 4 KiB page faults and is zeroed on
first touch. ``worker_env`` asks glibc (2.35 and later, ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``) to
advise transparent huge pages for the worker's heap and mappings; elsewhere the variable is ignored,
and a ``glibc.malloc.hugetlb`` the caller set is kept. Whether the kernel then gives huge pages is
decided per stretch of the run (``huge_pages``): the first huge pages a worker faults cost the kernel
a compaction of memory the gate's other processes just freed. That costs more than the faults it
saves while the shipped session opens (its prepacked weights are written once) or a small capture
runs, and less once a capture faults in gigabytes of marked values. So the shipped session always
runs on 4 KiB pages, and a capture on huge pages from ``HUGE_CAPTURE_BYTES`` of marked values
(docs/performance.md; ``scripts/bench_reuse.py --heap``). Where the call is missing (not Linux)
nothing changes.
"""

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
    """Release the heap's free pages; False where the C library has no ``malloc_trim``."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        release = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    release(0)
    return True


def worker_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a worker process: on Linux, glibc's malloc on transparent huge pages (madvise),
    unless the caller's tunables already say how."""
    out = dict(env)
    if not sys.platform.startswith("linux"):
        return out
    parts = [p for p in out.get(TUNABLES, "").split(":") if p]
    if not any(p.partition("=")[0] == HUGE_PAGES for p in parts):
        out[TUNABLES] = ":".join([*parts, f"{HUGE_PAGES}=1"])
    return out


def capture_pages(marked_bytes: int) -> bool:
    """Whether a capture of ``marked_bytes`` of values faults in on huge pages (module docstring)."""
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
    """Within the block, this process's new faults may (``allowed``) or may not be served with
    transparent huge pages (``prctl(PR_SET_THP_DISABLE)``); the setting before comes back after.
    Yields whether the setting took (False where there is no such call)."""
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
