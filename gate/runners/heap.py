"""The C heap of the gate's processes: memory given back before a worker starts, and a worker's
heap on transparent huge pages.

glibc keeps freed blocks below its mmap threshold (which grows to 32 MB as large blocks are freed)
inside the process's heap. After the export and the float64 reference of GPT-2 at sequence 2048
that was 0.35 GB of the gate's resident memory, held while the ONNX Runtime worker ran beside it.
``malloc_trim(0)`` returns those pages; where there is no such call (musl, macOS, Windows) this
does nothing.

A capture writes every marked value into fresh memory: blocks past the mmap threshold are mapped
and unmapped per tensor, and each 4 KiB page faults and is zeroed on first touch (GPT-2 at
sequence 2048: 4.3 GB of marked values, 5-6 s of system time in the worker). ``worker_env`` asks
glibc (2.35 and later, ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``) to advise huge pages for the
worker's heap and mappings, so a 200 MB tensor faults in 2 MiB pages; elsewhere the variable is
ignored. A ``glibc.malloc.hugetlb`` the caller set is kept.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Mapping

TUNABLES = "GLIBC_TUNABLES"
HUGE_PAGES = "glibc.malloc.hugetlb"


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
