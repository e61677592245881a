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


def environ(job: WorkerJob) -> None:
    """The worker's environment, as the worker sees it, into the file PARITY_GATE_TEST_ENV_OUT names."""
    import json

    with open(os.environ["PARITY_GATE_TEST_ENV_OUT"], "w") as f:
        json.dump(dict(os.environ), f)


def pages(job: WorkerJob) -> None:
    """Whether the kernel may serve huge pages (``THP_enabled`` in /proc/self/status) as each ONNX
    Runtime session opens, one JSON line per session into PARITY_GATE_TEST_ENV_OUT;
    PARITY_GATE_TEST_HUGE_FROM sets ``heap.HUGE_CAPTURE_BYTES`` in the worker."""
    import json

    from gate.runners import heap, ort_session

    if "PARITY_GATE_TEST_HUGE_FROM" in os.environ:
        heap.HUGE_CAPTURE_BYTES = int(os.environ["PARITY_GATE_TEST_HUGE_FROM"])
    opened = ort_session.SessionSpec.open

    def open_(self, model, what, record=False, *args, **kwargs):
        with open("/proc/self/status") as f:
            thp = next(line.split()[1] for line in f if line.startswith("THP_enabled:"))
        with open(os.environ["PARITY_GATE_TEST_ENV_OUT"], "a") as f:
            f.write(json.dumps({"shipped": record, "thp": thp}) + "\n")
        return opened(self, model, what, record, *args, **kwargs)

    ort_session.SessionSpec.open = open_
