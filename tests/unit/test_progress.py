"""Stage timing of progress messages (``gate.core.progress``)."""

from __future__ import annotations

from gate.core.progress import DETAIL, TimedProgress


def test_each_stage_reports_its_time_when_the_next_begins():
    now = [0.0]
    lines: list[str] = []
    stages = TimedProgress(lines.append, clock=lambda: now[0])
    stages("m: building")
    now[0] = 1.25
    stages("m: exporting to ONNX")
    now[0] = 4.0
    stages(f"{DETAIL}blocks.3")
    now[0] = 10.0
    stages.finish()
    assert lines == ["m: building", "  m: building — 1.2 s", "m: exporting to ONNX",
                     "  m: exporting to ONNX: blocks.3 (3 s)", "  m: exporting to ONNX — 8.8 s"]
    assert stages.times == [("m: building", 1.25), ("m: exporting to ONNX", 8.75)]


def test_finish_without_a_stage_says_nothing():
    lines: list[str] = []
    TimedProgress(lines.append).finish()
    assert lines == []
