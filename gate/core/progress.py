"""Progress messages: a message starts a stage (``"bert: exporting to ONNX"``); a message that
begins with ``DETAIL`` says where a long stage is (the layer it has reached) without ending it.
``TimedProgress`` times them: it hands each line on with the stage's elapsed seconds, so a log says
where a run's time went. No rich here; the CLI renders what it gets."""

from __future__ import annotations

import time
from collections.abc import Callable

Progress = Callable[[str], None]  # where the library says what it is doing: ``TimedProgress``, or a no-op
DETAIL = "… "
DETAIL_EVERY_S = 2.0  # a long stage says where it is at most this often


class TimedProgress:
    """``emit(text)`` is called with lines to show: a stage when it starts, ``  <stage> — 12.3 s``
    when it ends, and details with the seconds the stage has run so far."""

    def __init__(self, emit: Callable[[str], None], clock: Callable[[], float] = time.perf_counter):
        self.emit, self.clock = emit, clock
        self.stage: str | None = None
        self.started = clock()
        self.times: list[tuple[str, float]] = []

    def __call__(self, message: str) -> None:
        now = self.clock()
        if message.startswith(DETAIL):
            where = f"{self.stage}: " if self.stage else ""
            self.emit(f"  {where}{message[len(DETAIL):]} ({now - self.started:.0f} s)")
            return
        self.finish()
        self.stage, self.started = message, now
        self.emit(message)

    def finish(self) -> None:
        """End the current stage (call once more when the command is done)."""
        if self.stage is not None:
            seconds = self.clock() - self.started
            self.times.append((self.stage, seconds))
            self.emit(f"  {self.stage} — {seconds:.1f} s")
            self.stage = None
