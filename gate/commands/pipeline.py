"""Run one configured model: build it once, export it, fingerprint the float64 reference, then
run every selected provider through its runner. Returns a ``ModelRun``; judging it is the
verdict's job.

The model is built once and that same instance is exported and run on PyTorch. Providers run
in-process or, where the config isolates them (ONNX Runtime EPs and CUDA by default), in a
worker process that reads the exported bundle.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gate import fingerprint
from gate.config import Config, Isolation, ModelSpec, ProviderSpec
from gate.core import device
from gate.core.env import threads as env_threads
from gate.core.runs import LayerInfo, Meta, ModelRun, ProviderRun, RunError
from gate.core.versions import versions
from gate.errors import ModelError
from gate.formats.results import Bundle
from gate.runners.base import Subject, Unavailable, execute
from gate.runners.isolation import job_for, run_isolated
from gate.runners.registry import runner_for

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class Settings:
    """How a run is made: the intra-op threads of torch and ONNX Runtime (None: theirs)."""

    threads: int | None = None

    @classmethod
    def from_env(cls) -> Settings:
        return cls(threads=env_threads())


@dataclass
class Prepared:
    """A model built, exported and run on the reference."""

    run: ModelRun
    built: object | None  # gate.model.build.BuiltModel (torch)
    proto_bytes: bytes | None  # the shipped ONNX graph; None when the export failed
    inputs: list[np.ndarray]


def is_isolated(provider: ProviderSpec, isolation: Isolation) -> bool:
    """ONNX Runtime EPs and CUDA run in a worker unless the config says otherwise; PyTorch on CPU
    runs in-process (on the very instance that was exported)."""
    if provider.isolated is not None:
        return provider.isolated
    return isolation.enabled and (not provider.kind.torch or provider.device == "cuda")


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op threads for the block, restored after."""
    import torch

    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _meta(built) -> Meta:
    return Meta(**versions(), inputs_digest=built.inputs_digest, weights_digest=built.weights_digest,
                machine=device.machine(), fingerprint=fingerprint.parameters())


def _empty(module) -> bool:
    return not any(True for _ in module.children()) and not any(True for _ in module.parameters()) \
        and not any(True for _ in module.buffers())


def prepare(config: Config, spec: ModelSpec, progress: Progress = _quiet) -> Prepared:
    """Build once, export, fingerprint the float64 reference and map its layers to ONNX values.

    A failure of the model becomes ``run.error`` with its status; a wrong config raises.
    """
    from gate.model.build import build
    from gate.runners.reference import run_reference

    progress(f"{spec.name}: building")
    built = build(spec, config.root)
    run = ModelRun(spec.name, _meta(built))
    inputs = built.arrays
    if _empty(built.module):
        run.error = RunError("EMPTY", f"model `{spec.name}` has no modules, parameters or buffers: nothing to check")
        return Prepared(run, built, None, inputs)
    progress(f"{spec.name}: exporting to ONNX")
    exported, proto_bytes = None, None
    try:
        from gate.export.exporter import export

        exported = export(built)
    except ModelError as exc:
        run.error = RunError(exc.status, str(exc))
    if exported is not None:
        from gate.export.digest import graph_digest, op_types

        proto_bytes = exported.proto.SerializeToString()
        run.meta.exporter, run.meta.export_fallback, run.meta.opset = exported.exporter, exported.fallback, exported.opset
        run.meta.graph_digest, run.meta.op_types = graph_digest(exported.proto), op_types(exported.proto)
    progress(f"{spec.name}: float64 reference on torch-cpu")
    try:
        ref = run_reference(built, progress, spec.reference_promotion)
    except ModelError as exc:
        run.error = RunError(exc.status, str(exc))
        return Prepared(run, built, None, inputs)
    records, run.reference_dtype = ref.records, ref.dtype
    run.meta.promoted, run.meta.below_float64 = ref.notes.promoted or None, ref.notes.below or None
    run.layers = [LayerInfo(r.name, r.type, r.fp, reached=r.reached) for r in records]
    if exported is not None:
        from gate.export.layermap import assign

        run.onnx_map = assign(records, exported.calls, exported.shapes, exported.available)
    return Prepared(run, built, proto_bytes, inputs)


def run_provider(provider: ProviderSpec, subject: Subject, isolation: Isolation, isolated: bool,
                 config_path: Path | None = None) -> ProviderRun:
    """One provider on one model, in-process or in a worker, failures as statuses."""
    runner = runner_for(provider)
    if not isolated:
        runner.capture_bytes = isolation.capture_mb * 2**20 if isolation.capture_mb else None
        return execute(runner, subject)
    try:  # what the parent can tell at once needs no worker
        runner.precheck(subject)
    except Unavailable as exc:
        return ProviderRun.skipped(runner.target(), str(exc))
    except ModelError as exc:
        return ProviderRun.failed(runner.target(), exc.status, str(exc))
    job = job_for(provider, subject.bundle, subject.run.name, isolation, subject.threads, config_path)
    return run_isolated(job, runner.target(), isolation.timeout_s)


def run_providers(prepared: Prepared, bundle: Bundle, providers: tuple[ProviderSpec, ...], config: Config,
                  progress: Progress, settings: Settings) -> None:
    """PyTorch providers, then ONNX Runtime EPs (the order the report lists them in)."""
    subject = Subject(prepared.run, bundle.folder, prepared.built, settings.threads)
    for provider in sorted(providers, key=lambda p: not p.kind.torch):
        progress(f"{prepared.run.name}: {provider.name}" + (f" {provider.precision}" if provider.kind.torch else ""))
        isolated = is_isolated(provider, config.isolation)
        prepared.run.providers.append(run_provider(provider, subject, config.isolation, isolated, config.path))


def run_model(config: Config, spec: ModelSpec, providers: tuple[ProviderSpec, ...], progress: Progress = _quiet,
              settings: Settings | None = None) -> ModelRun:
    """Everything for one model."""
    settings = settings or Settings.from_env()
    with torch_threads(settings.threads):
        prepared = prepare(config, spec, progress)
        if prepared.run.error and not prepared.run.layers:
            return prepared.run
        with tempfile.TemporaryDirectory(prefix="parity-gate-") as tmp:
            bundle = Bundle(Path(tmp))
            bundle.write(prepared.run, prepared.proto_bytes, prepared.inputs)
            run_providers(prepared, bundle, providers, config, progress, settings)
    return prepared.run
