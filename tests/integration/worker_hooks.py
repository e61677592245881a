"""Faults for the worker-isolation tests, installed with PARITY_GATE_WORKER_HOOK.

Only the run of model `tiny-cnn` is hit; every other (model, provider) must still report.
"""

from __future__ import annotations

import os
import time

from gate.runners.job import WorkerJob


def fault(job: WorkerJob) -> None:
    if job.model != "tiny-cnn":
        return
    kind = os.environ.get("PARITY_GATE_TEST_FAULT")
    if kind == "abort":
        os.abort()
    elif kind == "hang":  # only under a short timeout: the tests that expect TIMEOUT
        time.sleep(3600)
    elif kind == "alloc":
        import numpy as np

        hog = np.ones(8 * 1024**3 // 8)  # 8 GiB, past the budget
        hog.sum()


def chatty(job: WorkerJob) -> None:
    """Progress on every capture segment, and a worker that also writes past a pipe's buffer to
    stdout (a library's prints) and to stderr."""
    import sys

    import gate.runners.onnxruntime as ort_runner

    ort_runner.DETAIL_EVERY_S = 0.0
    for i in range(20_000):
        print(f"a library's own output, line {i}")
    sys.stderr.write("warning: " * 30_000 + "\n")
