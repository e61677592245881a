"""Run one configured model: build it once, export it, fingerprint the float64 reference (``prepare``),
then run every selected provider through its runner, in-process or in a worker that reads the
exported bundle. The same instance is exported and run on PyTorch; where no later case of the command
runs it, it goes before the ONNX Runtime providers (``Memo.drop_model``). Judging is the verdict's job."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gate.config import Config, ModelSpec, ProviderSpec
from gate.core.progress import Progress
from gate.core.runs import ModelRun, ProviderRun
from gate.core.status import SkipKind
from gate.env import threads as env_threads
from gate.formats.results import Bundle
from gate.pipeline.prepare import Memo, Prepared, add_graph_digest, prepare
from gate.pipeline.providers import for_graph, is_isolated, run_provider
from gate.pipeline.stages import Plan
from gate.runners.base import Subject, execute
from gate.runners.isolation import Spare
from gate.runners.registry import nominal_target

if TYPE_CHECKING:
    from gate.model.trace import Probe
    from gate.runners.probed import ProbedRunner

__all__ = ["Progress", "Settings", "for_graph", "is_isolated", "run_model", "run_provider", "run_providers",
           "torch_threads"]


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class Settings:
    """How a run is made: the intra-op threads (None: the runtimes'), and whether ONNX Runtime's latency
    is measured when nothing reads it (``update-baseline`` records it for a later ``max-slowdown``)."""

    threads: int | None = None
    latency: bool = False

    def times(self, config: Config | None) -> bool:
        """Whether ONNX Runtime's default timed runs happen: something reads the latency."""
        return self.latency or (config is not None and config.max_slowdown is not None)

    @classmethod
    def from_env(cls) -> Settings:
        return cls(threads=env_threads())


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _probed(provider: ProviderSpec, probe: Probe | None, isolated: bool) -> ProbedRunner | None:
    if probe is None:
        return None
    from gate.runners.probed import probed_runner  # torch: already loaded where a probe ran

    return probed_runner(provider, probe, isolated)


def run_providers(prepared: Prepared, bundle: Bundle, providers: tuple[ProviderSpec, ...], config: Config,
                  progress: Progress, settings: Settings, spare: Spare | None = None,
                  memo: Memo | None = None) -> None:
    """PyTorch providers, then ONNX Runtime EPs (the report's order); the first isolated one in
    ``spare``. After the PyTorch ones, the model goes where ``memo`` says no later case runs it."""
    assert prepared.built is not None
    spec = prepared.built.spec
    subject = Subject(prepared.run, bundle.folder, prepared.built, settings.threads, prepared.outputs,
                      spec.output_tolerance, spec.repeats, settings.times(config), progress)
    for provider in sorted(providers, key=lambda p: not p.kind.torch):
        if (not provider.kind.torch and subject.built is not None and memo is not None
                and memo.drop_model(prepared)):
            subject = replace(subject, built=None)
        skip = config.skip_reason(prepared.run.name, provider.name)
        if skip:
            prepared.run.providers.append(ProviderRun.skipped(nominal_target(provider), skip, SkipKind.SWEEP))
            continue
        progress(f"{prepared.run.name}: {provider.name}" + (f" {provider.precision}" if provider.kind.torch else ""))
        isolated = is_isolated(provider, config.isolation)
        probed = _probed(provider, prepared.probe, isolated)
        if probed is not None:  # the probe ran this very forward: judged from its capture
            prepared.probe = None
            prepared.run.providers.append(execute(probed, subject))
            continue
        prepared.run.providers.append(run_provider(provider, subject, config.isolation, isolated, config.path,
                                                   spare if isolated else None))


def run_model(config: Config, spec: ModelSpec, providers: tuple[ProviderSpec, ...], progress: Progress = _quiet,
              settings: Settings | None = None, memo: Memo | None = None, plan: Plan | None = None) -> ModelRun:
    """Everything for one model (``memo``: what its cases share within one command; ``plan``: what
    each stage may take from its key, ``gate.pipeline.stages``)."""
    settings = settings or Settings.from_env()
    spare = _spare(providers, config)
    try:
        with torch_threads(settings.threads), tempfile.TemporaryDirectory(prefix="parity-gate-") as tmp:
            bundle = Bundle(Path(tmp))
            prepared = prepare(config, spec, progress, memo, plan, digest=False)
            try:
                if prepared.run.error and not prepared.run.layers:
                    return prepared.run
                bundle.write(prepared.run, prepared.model_file, prepared.inputs, prepared.outputs)
                run_providers(prepared, bundle, providers, config, progress, settings, spare, memo)
            finally:
                add_graph_digest(prepared, plan)  # hashed while the providers ran
        return prepared.run
    finally:
        if spare is not None:
            spare.close()
        if plan is not None:
            plan.finish()


def _spare(providers: tuple[ProviderSpec, ...], config: Config) -> Spare | None:
    """A worker for the first isolated ONNX Runtime provider, started now: its imports overlap the export."""
    return Spare() if any(is_isolated(p, config.isolation) and not p.kind.torch for p in providers) else None
