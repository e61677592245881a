"""Where a run's time goes, for the benchmarks: with ``PARITY_GATE_PROFILE=FILE`` set, wrapped
functions add up their seconds and every process (the gate's and its workers) appends one line
per function to FILE at exit: ``<pid> <name> <seconds> <calls>``. Unset, nothing is wrapped."""

from __future__ import annotations

import atexit
import os
import time
from collections.abc import Callable
from typing import Any

PROFILE = "PARITY_GATE_PROFILE"
_totals: dict[str, list[float]] = {}


def _write() -> None:
    path = os.environ.get(PROFILE)
    if not path or not _totals:
        return
    with open(path, "a", encoding="utf-8") as f:
        for name, (seconds, calls) in _totals.items():
            f.write(f"{os.getpid()} {name} {seconds:.4f} {int(calls)}\n")


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    if not os.environ.get(PROFILE):
        return fn
    if not _totals:
        atexit.register(_write)
    total = _totals.setdefault(name, [0.0, 0])

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            total[0] += time.perf_counter() - start
            total[1] += 1

    return wrapper
