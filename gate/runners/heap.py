"""The C heap of the gate's processes: memory given back before a worker starts.

glibc keeps freed blocks below its mmap threshold inside the heap; ``malloc_trim(0)`` returns them so
the gate does not hold them while a worker runs beside it (a no-op without that call)."""

from __future__ import annotations

import ctypes
import sys


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
