"""Prepare one case of a model: build it (once per configured model), export it (once per
export: cases that differ only in dynamic dimensions or input values share one graph), apply
the transform, fingerprint the float64 reference, map its layers to the shipped graph's values.

A failure of the model becomes ``run.error`` with its status; a wrong config raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gate import fingerprint
from gate.config import Config, ModelSpec
from gate.core import device
from gate.core.runs import LayerInfo, Meta, ModelRun, OnnxSite, RunError
from gate.core.stages import Progress
from gate.core.status import DataDependence, ErrorStatus
from gate.core.versions import versions
from gate.errors import ModelError
from gate.model import inputs as inputs_mod


@dataclass
class Prepared:
    """A case built, exported and run on the reference."""

    run: ModelRun
    built: object | None  # gate.model.build.BuiltModel (torch)
    model_file: Path | None  # the shipped ONNX graph (external data beside it); None when the export failed
    inputs: list[np.ndarray]
    outputs: list[np.ndarray] = field(default_factory=list)  # the reference's outputs (float64), in order
    exported: object | None = None  # gate.export.exporter.Exported: owns the folder model_file is in


@dataclass
class Cache:
    """What the cases of one configured model share within a command: the built model and the
    exports by key. Cases of a model are consecutive, so only the current model's are kept."""

    model: str | None = None
    modules: dict[str, object] = field(default_factory=dict)
    exports: dict[tuple, object] = field(default_factory=dict)  # Exported, or the ModelError it raised

    def enter(self, spec: ModelSpec) -> Cache:
        base = spec.base or spec.name
        if base != self.model:
            self.model, self.modules, self.exports = base, {}, {}
        return self


def _meta(built) -> Meta:
    tolerance = built.spec.output_tolerance
    dtypes = [str(t.dtype).removeprefix("torch.") for t in built.inputs]
    return Meta(**versions(), inputs_digest=built.inputs_digest,  # weights_digest: once hashed (``prepare``)
                inputs=inputs_mod.describe(built.input_names, built.arrays, dtypes),
                machine=device.machine(), fingerprint=fingerprint.parameters(),
                normalizations=list(built.normalizations), output_tolerance=list(tolerance) if tolerance else None)


def _empty(module) -> bool:
    return not any(True for _ in module.children()) and not any(True for _ in module.parameters()) \
        and not any(True for _ in module.buffers())


def _build(config: Config, spec: ModelSpec, cache: Cache, progress: Progress):
    from gate.model.build import build, build_module

    key = spec.base or spec.name
    if key not in cache.modules:
        from gate.model.budget import check

        check(spec, config.root, config.isolation.memory_mb)  # before the build: fail early, saying what it needs
        progress(f"{spec.name}: building")
        cache.modules[key] = build_module(spec, config.root)
    return build(spec, config.root, cache.modules[key])


def _export(config: Config, built, cache: Cache, progress: Progress):
    """The shipped graph for this case (shared by cases with the same export key)."""
    spec = built.spec
    key = spec.export_key
    if key not in cache.exports:
        progress(f"{spec.name}: " + ("reading the artifact" if spec.artifact else "exporting to ONNX"))
        try:
            with built.fresh():  # tracing runs the model's Python: what it caches stays in the export
                cache.exports[key] = _exported(config, built)
        except ModelError as exc:
            cache.exports[key] = exc
    return cache.exports[key]


def _exported(config: Config, built):
    spec = built.spec
    if spec.artifact is not None:
        from gate.export.artifact import load

        exported = load(built)
    else:
        from gate.export.exporter import export

        exported = export(built)
    if spec.transform:
        from gate.export.layermap import available_values
        from gate.export.saved import load_full
        from gate.export.transform import apply

        exported.save(apply(spec, load_full(exported.path), config.root))
        exported.shipped = available_values(exported.proto)
    from gate.core.background import Background
    from gate.export.graph import file_digest

    exported.digest = Background(file_digest, exported.path)  # streamed from the file beside the reference run
    return exported


def _record_export(run: ModelRun, spec: ModelSpec, exported) -> Path:
    from gate.export import graph

    meta = run.meta
    meta.exporter, meta.export_fallback, meta.opset = exported.exporter, exported.fallback, exported.opset
    meta.op_types = graph.op_types(exported.proto)  # graph_digest: once hashed (``prepare``)
    meta.dynamic_dims = graph.dynamic_dims(exported.proto) or None
    meta.transform = spec.transform
    meta.graph_precision = graph.precision(exported.proto) if spec.transform or spec.artifact else None
    return exported.path


def _sites(records, exported, spec: ModelSpec) -> dict[str, OnnxSite]:
    from gate.export.layermap import assign

    sites = assign(records, exported.calls, exported.shapes, exported.available, ambiguous=exported.ambiguous,
                   outputs=exported.outputs)
    if exported.as_shipped:
        from gate.export.layermap import fold_batchnorms

        sites = fold_batchnorms(records, sites)
    if exported.shipped is not None:  # values the transform removed or renamed have no value now
        why = f"removed by the transform `{spec.transform}`"
        sites = {name: OnnxSite("absent", s.value, reason=why) if s.kind == "value" and s.value not in exported.shipped
                 else s for name, s in sites.items()}
    return sites


def prepare(config: Config, spec: ModelSpec, progress: Progress = lambda _: None, cache: Cache | None = None) -> Prepared:
    """Build (once), export (once per export), fingerprint the float64 reference, map its layers."""
    from gate.runners.reference import compare_as_given, run_reference

    cache = (cache if cache is not None else Cache()).enter(spec)
    built = _build(config, spec, cache, progress)
    run = ModelRun(spec.name, _meta(built))
    if spec.sweep is None and _empty(built.module):  # a sweep's op has nothing but its call
        run.error = RunError(ErrorStatus.EMPTY, f"model `{spec.name}` has no modules, parameters or buffers: nothing to check")
        run.meta.weights_digest = built.weights_digest
        return Prepared(run, built, None, built.arrays)
    exported = _export(config, built, cache, progress)
    run.meta.weights_digest = built.weights_digest  # hashed while the export ran
    run.meta.tensor_digests = built.tensor_digests
    model_file = None
    if isinstance(exported, ModelError):
        run.error, exported = RunError.of(exported), None
    else:
        model_file = _record_export(run, spec, exported)
    progress(f"{spec.name}: float64 reference on torch-cpu")
    try:
        ref = run_reference(built, progress, spec.reference_promotion)
    except ModelError as exc:
        run.error = RunError.of(exc)
        return Prepared(run, built, None, built.arrays)
    finally:
        if exported is not None:  # hashed while the reference ran
            run.meta.graph_digest = exported.digest.result()
    run.reference_dtype = ref.dtype
    run.meta.promoted, run.meta.below_float64 = ref.notes.promoted or None, ref.notes.below or None
    run.layers = [LayerInfo(r.name, r.type, r.fp, reached=r.reached,
                            data_dependent=DataDependence.OP if r.data_dependent else None)
                  for r in ref.records + ref.gradients]
    if built.training:
        progress(f"{spec.name}: the model as given (modules left in training mode)")
        run.meta.training = compare_as_given(built, ref, spec.reference_promotion)
    if exported is not None:
        run.onnx_map = _sites(ref.records, exported, spec)
    return Prepared(run, built, model_file, built.arrays, ref.outputs, exported)
