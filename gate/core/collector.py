"""The garbage collector around a command, decided here. A full collection scans every object the
process holds, and a gate's process holds a great many long-lived ones (torch, the model's libraries):
no full collection while a command loads; while the stages run (``frozen``) what is alive is set aside
from collection; at exit everything is (the operating system frees the pages at once).
What it saves: ``scripts/bench_gc.py``, docs/performance.md.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
from collections.abc import Iterator

LOADING = 10**9  # the full collection's threshold while loading: never reached
_held: list[tuple[int, int, int]] = []  # the process's own thresholds, while a command loads


@contextlib.contextmanager
def command() -> Iterator[None]:
    """One command of the CLI: loading without full collections until its stages start (or it
    ends), the heap set aside at the interpreter's exit."""
    before = gc.get_threshold()
    _held[:] = [before]
    gc.set_threshold(before[0], before[1], LOADING)
    atexit.unregister(gc.freeze)  # once, however many commands a process runs
    atexit.register(gc.freeze)
    try:
        yield
    finally:
        loaded()


def loaded() -> None:
    """Loading is over: full collections as the process had them."""
    if _held:
        gc.set_threshold(*_held.pop())


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """The stages of one model: what is alive now (the imports, the model as built) set aside from
    collection while they run, collected as before once they are done."""
    loaded()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
