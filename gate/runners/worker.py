"""One (model, provider) run in its own process: ``python -m gate.runners.worker JOB``.

The worker reads the run so far from the job's bundle, runs the provider's runner and writes the
``ProviderRun`` to a result file. A PyTorch provider rebuilds the model from the config under its seed
and refuses to go on unless the weights and inputs digests equal the exported model's, so the model
compared is the model exported. ONNX Runtime workers import no torch."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from gate import env
from gate.core.failure import ModelError
from gate.core.runs import Meta, ModelRun, ProviderRun
from gate.core.status import ErrorStatus
from gate.errors import FormatError, GateError
from gate.formats.results import Bundle, write_runs
from gate.runners.base import Subject, Unavailable, execute, failed_run
from gate.runners.isolation import WAIT, report
from gate.runners.job import WorkerJob
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


def _call_hook(job: WorkerJob) -> None:
    """PARITY_GATE_WORKER_HOOK=module:function runs before the provider (debugging, fault tests)."""
    spec = env.worker_hook()
    if spec:
        module, _, attr = spec.partition(":")
        getattr(importlib.import_module(module), attr)(job)


def rebuild(job: WorkerJob, meta: Meta):
    """The model of the job, built again from its factory; ModelError unless it is the same model."""
    from gate.config import load_config
    from gate.model.build import build

    if job.config is None:
        raise ModelError(f"{job.what}: a PyTorch provider in a worker needs the config to rebuild the model",
                         ErrorStatus.LOAD_FAIL)
    config = load_config(job.config)
    (spec,) = config.select_models([job.model])
    built = build(spec, config.root)
    for key, got in (("weights_digest", built.weights_digest), ("inputs_digest", built.inputs_digest)):
        if got != getattr(meta, key):
            raise ModelError(f"{job.what}: rebuilt in the worker, the model has other {key.split('_')[0]} than the "
                             "one exported (its factory is not deterministic under its seed); run this provider "
                             "in-process with `isolated = false`", ErrorStatus.BUILD_FAIL)
    return built


def subject_of(job: WorkerJob) -> Subject:
    bundle = Bundle(job.bundle)
    return Subject(bundle.read_run(), bundle.folder, threads=job.threads, outputs=bundle.outputs(),
                   output_tolerance=job.output_tolerance, repeats=job.repeats, latency=job.latency,
                   detail=report, capture_bytes=job.capture_bytes)


def execute_job(job: WorkerJob) -> ProviderRun:
    """The job's run; the worker's own failures (a bundle or config it cannot read, a model rebuilt
    otherwise, memory past the budget) are statuses too."""
    runner = runner_for(job.provider)
    try:
        subject = subject_of(job)
        _call_hook(job)
        if job.provider.kind.torch:
            subject.built = rebuild(job, subject.run.meta)
        return execute(runner, subject)
    except (Unavailable, GateError, MemoryError) as exc:
        return failed_run(exc, runner.target(), job.what, job.memory_mb)


def _waited(argv: list[str]) -> list[str] | None:
    """``argv``, or for a spare (``isolation.WAIT``) the job's path read from stdin once ONNX Runtime
    and the runners are loaded; None when the parent closed stdin without a job."""
    if argv[:1] != [WAIT]:
        return argv
    import onnxruntime  # type: ignore[import-untyped]  # noqa: F401 - loaded while the parent still exports

    import gate.runners.onnxruntime  # noqa: F401
    line = sys.stdin.readline().strip()
    return [line] if line else None


def main(argv: list[str]) -> int:
    waited = _waited(argv)
    if waited is None:
        return 0
    argv = waited
    try:
        job = WorkerJob.from_bytes(Path(argv[0]).read_bytes(), argv[0])
        if job.result is None:
            raise FormatError(f"worker job `{argv[0]}`: `result`: expected a string, got null")
    except (OSError, FormatError) as exc:  # the parent reports the last stderr line as the crash's cause
        print(exc, file=sys.stderr)
        return 2
    _limit_memory(job.memory_mb)
    write_runs(job.result, [ModelRun(job.model, providers=[execute_job(job)])])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
