"""A worker hook for tests/e2e/test_ahead.py (PARITY_GATE_WORKER_HOOK=ahead_hooks:log): each worker's
job, one JSON line into the file AHEAD_TEST_JOBS names, and for a job started ahead of its reference
the file AHEAD_TEST_STARTED, which the model's reference waits for (``beside_models.WaitsForAhead``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gate.runners.job import WorkerJob


def log(job: WorkerJob) -> None:
    with open(os.environ["AHEAD_TEST_JOBS"], "a") as f:
        f.write(json.dumps({"provider": job.provider.name, "ahead": job.ahead}) + "\n")
    if job.ahead is not None:
        Path(os.environ["AHEAD_TEST_STARTED"]).touch()
