"""One (model, provider) ONNX Runtime run in its own process: ``python -m gate.worker JOB``.

A segfaulting execution provider, a hang or an allocation past the memory budget ends this
process, not the gate: the parent (``gate.collect``) turns it into a reported status. The
result travels through a file, never a pipe, so a large result cannot deadlock the parent
waiting on a full pipe buffer. No torch here.
"""

from __future__ import annotations

import os
import resource
import sys
from pathlib import Path

import msgpack

MiB = 1024 * 1024


def _limit_memory(budget_mb: int | None) -> None:
    if budget_mb:
        limit = budget_mb * MiB
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _call_hook(job: dict) -> None:
    """PARITY_GATE_WORKER_HOOK=module:function runs before the provider (debugging, fault tests)."""
    spec = os.environ.get("PARITY_GATE_WORKER_HOOK")
    if not spec:
        return
    import importlib

    module, _, attr = spec.partition(":")
    getattr(importlib.import_module(module), attr)(job)


def execute(job: dict) -> dict:
    import numpy as np
    import onnx

    from gate.capture import ort_capture
    from gate.errors import ModelError

    try:
        proto = onnx.load(job["model"])
        with np.load(job["inputs"], allow_pickle=False) as npz:
            inputs = [npz[f"arg{i}"] for i in range(len(npz.files))]
    except Exception as exc:  # a truncated or foreign file: the provider cannot load the model
        return {"status": "LOAD_FAIL", "message": f"{job['what']}: cannot read the exported model or inputs "
                f"({type(exc).__name__}: {str(exc)[:200]})"}
    try:
        _call_hook(job)
        result = ort_capture.run(proto, job["provider"], job["options"], inputs, job["values"], job["what"],
                                 threads=job.get("threads"), capture_bytes=job.get("capture_bytes"),
                                 value_bytes=job.get("value_bytes"))
    except ModelError as exc:
        return {"status": exc.status, "message": str(exc)}
    except MemoryError:
        return {"status": "CRASH", "message": f"{job['what']}: {job['provider']} ran out of memory "
                f"(budget {job.get('memory_mb')} MiB)"}
    return {"status": "ok", "outputs": [fp.to_dict() for fp in result.outputs],
            "values": {k: fp.to_dict() for k, fp in result.values.items()},
            "latency_ms": result.latency_ms, "placement": result.placement,
            "peak_capture_bytes": result.peak_capture_bytes}


def main(argv: list[str]) -> int:
    job_path = Path(argv[0])
    job = msgpack.unpackb(job_path.read_bytes(), raw=False)
    _limit_memory(job.get("memory_mb"))
    out = execute(job)
    tmp = Path(job["out"] + ".tmp")
    tmp.write_bytes(msgpack.packb(out, use_bin_type=True))
    os.replace(tmp, job["out"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
