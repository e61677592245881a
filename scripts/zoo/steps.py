"""One command of a row, measured as every benchmark here measures (``scripts/measure.py``): wall time
and the peak memory of its whole process tree (the gate runs ONNX Runtime in a worker process); in its
own process group, so that a timeout ends that tree and nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from measure import stage_seconds, started


@dataclass
class Step:
    rc: int | None  # None: ended by the timeout
    wall: float
    peak_gb: float
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        return self.rc is None

    def to_dict(self) -> dict:
        stages = {k: round(v, 2) for k, v in stage_seconds(self.stderr).items() if v}
        return {"rc": self.rc, "wall_s": round(self.wall, 2), "peak_gb": round(self.peak_gb, 3), "stages": stages}


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Step:
    start = time.perf_counter()
    proc, peak = started(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = proc.communicate(timeout=max(timeout, 1.0))
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the group this command leads: the gate and its workers
        out, err = proc.communicate()
        rc = None
    return Step(rc, time.perf_counter() - start, peak() / 1e9, out, err)
