"""One (model, provider) run in its own process: ``python -m gate.runners.worker JOB``.

The job (``isolation.job_for``) names a bundle and a provider. The worker reads the run so far
from the bundle, runs the provider's runner on it, and writes the ``ProviderRun`` as a result
file. A PyTorch provider needs the model itself: the worker rebuilds it from the config under
the same seed and refuses to go on unless its weights and inputs digests equal the exported
model's, so the model compared is still the model exported. ONNX Runtime workers import no torch.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import msgpack

from gate.config import ProviderSpec
from gate.core.runs import Meta, ModelRun, ProviderRun
from gate.core.status import ErrorStatus
from gate.errors import GateError, ModelError
from gate.formats.results import Bundle, write_runs
from gate.runners.base import Subject, execute
from gate.runners.isolation import report
from gate.runners.registry import runner_for

MiB = 1024 * 1024


def _limit_memory(budget_mb: int | None) -> None:
    """An address-space budget (POSIX; elsewhere there is no such limit and none is applied)."""
    if not budget_mb:
        return
    try:
        import resource
    except ImportError:  # Windows
        return
    resource.setrlimit(resource.RLIMIT_AS, (budget_mb * MiB, budget_mb * MiB))


def _call_hook(job: dict) -> None:
    """PARITY_GATE_WORKER_HOOK=module:function runs before the provider (debugging, fault tests)."""
    spec = os.environ.get("PARITY_GATE_WORKER_HOOK")
    if spec:
        module, _, attr = spec.partition(":")
        getattr(importlib.import_module(module), attr)(job)


def rebuild(job: dict, meta: Meta):
    """The model of the job, built again from its factory; ModelError unless it is the same model."""
    from gate.config import load_config
    from gate.model.build import build

    if not job.get("config"):
        raise ModelError(f"{job['what']}: a PyTorch provider in a worker needs the config to rebuild the model",
                         ErrorStatus.LOAD_FAIL)
    config = load_config(Path(job["config"]))
    (spec,) = config.select_models([job["model"]])
    built = build(spec, config.root)
    for key, got in (("weights_digest", built.weights_digest), ("inputs_digest", built.inputs_digest)):
        if got != getattr(meta, key):
            raise ModelError(f"{job['what']}: rebuilt in the worker, the model has other {key.split('_')[0]} than the "
                             "one exported (its factory is not deterministic under its seed); run this provider "
                             "in-process with `isolated = false`", ErrorStatus.BUILD_FAIL)
    return built


def execute_job(job: dict) -> ProviderRun:
    spec = ProviderSpec(**job["provider"])
    runner = runner_for(spec)
    bundle = Bundle(Path(job["bundle"]))
    run = bundle.read_run()
    tolerance = job.get("output_tolerance")
    subject = Subject(run, bundle.folder, threads=job.get("threads"), outputs=bundle.outputs(),
                      output_tolerance=tuple(tolerance) if tolerance else None, repeats=job.get("repeats"),
                      latency=bool(job.get("latency")), detail=report)
    try:
        _call_hook(job)
        if spec.kind.torch:
            subject.built = rebuild(job, run.meta)
        runner.capture_bytes = job.get("capture_bytes")
        return execute(runner, subject)
    except ModelError as exc:
        return ProviderRun.failed(runner.target(), exc.error_status, str(exc))
    except MemoryError:
        return ProviderRun.failed(runner.target(), ErrorStatus.CRASH, f"{job['what']}: {spec.name} ran out of memory "
                                  f"(budget {job.get('memory_mb')} MiB)")


def main(argv: list[str]) -> int:
    job = msgpack.unpackb(Path(argv[0]).read_bytes(), raw=False)
    _limit_memory(job.get("memory_mb"))
    try:
        prun = execute_job(job)
    except GateError as exc:  # a broken bundle or config: the provider cannot load the model
        prun = ProviderRun.failed(runner_for(ProviderSpec(**job["provider"])).target(), ErrorStatus.LOAD_FAIL,
                                  f"{job['what']}: {exc}")
    write_runs(Path(job["out"]), [ModelRun(job["model"], providers=[prun])])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
