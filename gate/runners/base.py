"""One interface for every kind of provider (PyTorch eager, ``torch.compile``, each ONNX Runtime EP).

``prepare`` takes the ``Subject`` (``Unavailable`` when the provider cannot run here; ``precheck``
tells that alone, cheaply), ``run`` returns the ``ProviderRun``, ``close`` releases. ``execute`` drives
that lifecycle and ``failed_run`` is the one place an exception becomes a status, so one provider never
takes the others down. Callers pick a runner by kind (``registry.runner_for``), never by name."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gate.config import ProviderSpec
from gate.core.failure import ModelError
from gate.core.runs import ModelRun, ProviderRun
from gate.core.status import ErrorStatus
from gate.core.target import Target
from gate.errors import GateError

if TYPE_CHECKING:
    from gate.model.build import BuiltModel


class Unavailable(Exception):
    """The provider cannot run on this machine; the message is the skip's reason."""


@dataclass
class Subject:
    """What a runner runs: the run so far, the exported bundle and, where PyTorch runs, the built model."""

    run: ModelRun
    bundle: Path | None = None
    built: BuiltModel | None = None
    threads: int | None = None  # intra-op threads of torch / ONNX Runtime (None: theirs)
    outputs: list[np.ndarray] = field(default_factory=list)  # the reference's outputs, float64, in order
    output_tolerance: tuple[float, float] | None = None  # (rtol, atol) of the exact output metrics
    repeats: int | None = None  # timed runs per provider (median, p90); None: ONNX Runtime's default only
    latency: bool = False  # time ONNX Runtime's default runs even without ``repeats`` (something reads them)
    detail: Callable[[str], None] | None = None  # where a long run is ("segment 2/3, to h.11"), for progress
    capture_bytes: int | None = None  # marked intermediates held at once (None: all in one run)

    @property
    def timing_runs(self) -> int:
        """Warm runs of the shipped graph to time: ``repeats``, else 5 where latency is read, else none."""
        return self.repeats or (5 if self.latency else 0)


class Runner(ABC):
    def __init__(self, spec: ProviderSpec):
        self.spec = spec

    @property
    def name(self) -> str:
        return self.spec.name

    @abstractmethod
    def target(self) -> Target:
        """The provider, the device class it runs on here, and its precision."""

    def precheck(self, subject: Subject) -> None:
        """What can be told without loading the model (``Unavailable``, ``ModelError``): cheap, so a
        parent asks before it starts a worker."""
        return None

    def prepare(self, subject: Subject) -> None:
        self.precheck(subject)
        self.subject = subject

    @abstractmethod
    def run(self) -> ProviderRun:
        """Run once; a failure is a ``ModelError`` whose status the report shows."""

    def close(self) -> None:
        self.subject = None


FAILURES = (Unavailable, ModelError, MemoryError)  # how a run may end early; anything else is a bug


def failed_run(exc: BaseException, target: Target, what: str | None = None,
               budget_mb: int | None = None) -> ProviderRun:
    """The status ``exc`` makes of ``target``'s run; anything but ``FAILURES`` and ``GateError`` is a
    bug and is raised again. A worker passes ``what`` (the model) and its budget for the message."""
    if isinstance(exc, Unavailable):
        return ProviderRun.skipped(target, str(exc))
    if isinstance(exc, ModelError):
        return ProviderRun.failed(target, exc.error_status, str(exc), exc.where, exc.trace)
    if isinstance(exc, MemoryError):
        message = f"{target.provider} ran out of memory"
        if what is not None:
            message = f"{what}: {message} (budget {budget_mb} MiB)"
        return ProviderRun.failed(target, ErrorStatus.CRASH, message)
    if isinstance(exc, GateError):
        return ProviderRun.failed(target, ErrorStatus.LOAD_FAIL, str(exc) if what is None else f"{what}: {exc}")
    raise exc


def execute(runner: Runner, subject: Subject) -> ProviderRun:
    """Prepare, run and close ``runner``: unavailable becomes ``skipped``, a failure ``error``."""
    target = runner.target()
    try:
        runner.prepare(subject)
        return runner.run()
    except FAILURES as exc:
        return failed_run(exc, target)
    finally:
        runner.close()
