"""A worker started ahead of its float64 reference (``WorkerJob.ahead``; the parent's side is
``gate.commands.ahead``): it captures the graph while the reference still runs in the parent's
child, then waits for the parent's word on its stdin.

The capture needs only the graph, its inputs and the layer map, which the export made from the
probe's records; the judging needs the reference. ``READY``: the bundle now holds the reference's run
and outputs, read again here. ``DROP`` (or stdin closed): the reference did not come as the capture
assumed, and the worker ends without a result (``Dropped``); the parent runs the provider afresh.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from gate.core.runs import ModelRun
from gate.core.stages import DETAIL
from gate.formats.results import Bundle
from gate.runners.isolation import report

READY, DROP = "ready", "drop"
CAPTURED = f"{DETAIL}captured; waiting for the float64 reference"  # the progress line before the wait


class Dropped(Exception):
    """The parent dropped the run that went ahead: no result is written."""


class Awaited:
    """The parent's word, read on a thread from when the worker starts, so that the sessions opened
    after the reference is done get all their threads (``threads``)."""

    def __init__(self, bundle: Bundle, ahead: int, threads: int | None) -> None:
        self._bundle, self._ahead, self._threads = bundle, ahead, threads
        self._word: str | None = None
        self._said = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        self._word = sys.stdin.readline().strip()  # "" at the end of stdin: the parent is gone
        self._said.set()

    def threads(self) -> int | None:
        return self._threads if self._said.is_set() else self._ahead

    def final(self) -> tuple[ModelRun, list[np.ndarray]]:
        if not self._said.is_set():
            report(CAPTURED)
        self._said.wait()
        if self._word != READY:
            raise Dropped(self._word or "stdin closed")
        return self._bundle.read_run(), self._bundle.outputs()
