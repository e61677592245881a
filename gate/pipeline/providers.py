"""One provider on one model, in-process or in a worker: where it runs (``is_isolated``), what it
runs as (``for_graph``), and its run (``run_provider``). Failures are statuses of the run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gate.config import Isolation, ProviderSpec
from gate.core.runs import ProviderRun
from gate.core.target import DEFAULT_PRECISION
from gate.runners import heap
from gate.runners.base import FAILURES, Subject, execute, failed_run
from gate.runners.isolation import Spare, job_for, run_isolated
from gate.runners.registry import runner_for


def is_isolated(provider: ProviderSpec, isolation: Isolation) -> bool:
    """ONNX Runtime EPs and CUDA run in a worker unless the config says otherwise; PyTorch on CPU
    runs in-process (on the very instance that was exported)."""
    if provider.isolated is not None:
        return provider.isolated
    return isolation.enabled and (not provider.kind.torch or provider.device == "cuda")


def for_graph(provider: ProviderSpec, graph_precision: str | None) -> ProviderSpec:
    """An ONNX Runtime EP runs what the graph computes in: a transformed or prebuilt float16/int8
    graph gets that precision's label and default tolerances (unless the config set one)."""
    if provider.kind.torch or not graph_precision or provider.precision != DEFAULT_PRECISION:
        return provider
    return replace(provider, precision=graph_precision)


def run_provider(provider: ProviderSpec, subject: Subject, isolation: Isolation, isolated: bool,
                 config_path: Path | None = None, spare: Spare | None = None) -> ProviderRun:
    """One provider on one model, in-process or in a worker, failures as statuses."""
    provider, subject = _as_run(provider, subject, isolation)
    runner = runner_for(provider)
    if not isolated:
        return execute(runner, subject)
    try:  # what the parent can tell at once needs no worker
        runner.precheck(subject)
    except FAILURES as exc:
        return failed_run(exc, runner.target())
    heap.trim()  # what the export and the reference freed is not held beside the worker
    job = job_for(provider, subject, isolation, config_path)
    return run_isolated(job, runner.target(), isolation.timeout_s, subject.detail, spare)


def _as_run(provider: ProviderSpec, subject: Subject, isolation: Isolation) -> tuple[ProviderSpec, Subject]:
    """The provider as the graph computes, and the subject with the capture budget (here and in a worker)."""
    provider = for_graph(provider, subject.run.meta.graph_precision)
    budget = isolation.capture_mb * 2**20 if isolation.capture_mb else None
    return provider, replace(subject, capture_bytes=budget)
