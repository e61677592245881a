"""One provider on one model, in-process or in a worker: where it runs (``is_isolated``), what it
runs as (``for_graph``), and its run (``run_provider``; ``start_isolated`` starts a worker's run
without waiting for it). Failures are statuses of the run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gate.config import Isolation, ProviderSpec
from gate.core.runs import ProviderRun
from gate.core.target import DEFAULT_PRECISION
from gate.runners import heap
from gate.runners.base import FAILURES, Subject, execute, failed_run
from gate.runners.isolation import Spare, Started, job_for
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
    """One provider on one model, in-process or in a worker (``spare``, where one waits), failures
    as statuses."""
    if not isolated:
        provider, subject = _as_run(provider, subject, isolation)
        return execute(runner_for(provider), subject)
    started = start_isolated(provider, subject, isolation, config_path, spare)
    return started if isinstance(started, ProviderRun) else started.wait(isolation.timeout_s)


def start_isolated(provider: ProviderSpec, subject: Subject, isolation: Isolation,
                   config_path: Path | None = None, spare: Spare | None = None,
                   ahead: int | None = None) -> Started | ProviderRun:
    """A worker started on the provider's run (``ahead``: before the reference, its sessions on that
    many threads until told, ``gate.runners.ahead``); the status where the parent can tell at once
    that it cannot run."""
    provider, subject = _as_run(provider, subject, isolation)
    runner = runner_for(provider)
    try:  # what the parent can tell at once needs no worker
        runner.precheck(subject)
    except FAILURES as exc:
        return failed_run(exc, runner.target())
    heap.trim()  # what the export and the reference freed is not held beside the worker
    job = replace(job_for(provider, subject, isolation, config_path), ahead=ahead)
    return Started(job, runner.target(), subject.detail, spare)


def _as_run(provider: ProviderSpec, subject: Subject, isolation: Isolation) -> tuple[ProviderSpec, Subject]:
    """The provider as the graph computes, and the subject with the capture budget: it reaches the
    runner on its subject, here and in a worker (``job_for``) alike."""
    provider = for_graph(provider, subject.run.meta.graph_precision)
    budget = isolation.capture_mb * 2**20 if isolation.capture_mb else None
    return provider, replace(subject, capture_bytes=budget)
