"""The configuration as types: what ``parse`` builds from ``[tool.parity-gate]``.

Nothing here imports torch: factories are resolved later, by ``gate.model``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from gate.config.providers import Kind, canonical_provider, kind_of
from gate.core.target import DEFAULT_PRECISION
from gate.errors import ConfigError

DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool")
EXPORTERS = ("dynamo", "torchscript")

# Defaults per runtime precision: half-precision rounding (~1e-3 / ~8e-3 per op) needs its own budget.
PRECISION_TOLERANCE = {
    "float16": {"floor": 1e-3, "ceiling": 5e-2},
    "bfloat16": {"floor": 1e-2, "ceiling": 2e-1},
    "int8": {"floor": 5e-2, "ceiling": 5e-1},
}


@dataclass(frozen=True)
class Tolerance:
    """Thresholds of the checks (docs/verdict.md): a runtime passes a layer while its relative L2 error
    against the float64 reference is <= growth * baseline error + floor, and never above ``ceiling``;
    ``reference``: the largest relative L2 change of the reference itself (a model change)."""

    growth: float = 2.0
    floor: float = 1e-6
    reference: float = 1e-9
    ceiling: float = 1e-2

    def merged(self, overrides: Mapping[str, float]) -> Tolerance:
        return replace(self, **dict(overrides))


@dataclass(frozen=True)
class DetectionTolerance:
    """The ``detections`` rule for a detector's data-dependent outputs (docs/verdict.md):
    detections scoring at least ``min_score`` (on either side) must be matched, their boxes must
    overlap by at least ``iou`` and their scores differ by at most ``score``; below ``min_score``
    the post-processing's margins may keep other boxes in float32 than in float64."""

    min_score: float = 0.5
    iou: float = 0.9
    score: float = 1e-2


@dataclass(frozen=True)
class LayerTolerance:
    pattern: str  # fnmatch glob over layer names
    overrides: Mapping[str, float]
    where: str = ""  # its key for messages: "models[1].layer-tolerances[1].layers"


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    # torch providers run the model in this dtype; for an EP it labels what its options select
    # (e.g. TensorRT's trt_fp16_enable): the precision's default tolerances and baseline entry.
    precision: str = DEFAULT_PRECISION
    isolated: bool | None = None  # run in a worker process; None: the kind's default (see pipeline)
    session_options: Mapping[str, Any] = field(default_factory=dict)  # ONNX Runtime SessionOptions

    @property
    def kind(self) -> Kind:
        return kind_of(self.name)

    @property
    def device(self) -> str | None:
        return self.kind.device


@dataclass(frozen=True)
class SweepCase:
    """What one case of a sweep builds: ``target`` (a class to construct, or a function to call)
    with ``args``/``kwargs`` after the inputs, every template filled from ``values``."""

    sweep: str
    kind: str  # "module" | "op"
    target: str  # "torch.nn.GELU", "torch.ops.aten.add.Tensor", "mypkg.layers:MyNorm"
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    values: tuple[tuple[str, Any], ...] = ()  # every var and dim of the case


@dataclass(frozen=True)
class Skip:
    """A case (glob) not run on a provider (glob), with the reason the report lists."""

    case: str
    provider: str
    reason: str

    def matches(self, case: str, provider: str) -> bool:
        # "act.gelu.b8" matches "act.gelu.*" and, within its sweep, "gelu.*"
        named = fnmatchcase(case, self.case) or fnmatchcase(case.partition(".")[2], self.case)
        return named and fnmatchcase(provider, self.provider)


@dataclass(frozen=True)
class Pair:
    """Two cases compared on each provider: every case whose ``axis`` is ``left`` against the case
    that differs from it only by ``axis`` = ``right`` (a custom layer against PyTorch's own)."""

    axis: str
    left: Any
    right: Any
    tolerance: float = 1e-5  # largest relative L2 difference of their outputs


@dataclass(frozen=True)
class Sweep:
    name: str
    cases: tuple[str, ...]
    skips: tuple[Skip, ...] = ()
    pairs: tuple[Pair, ...] = ()
    anchor: str | None = None  # a provider every other one is also compared with
    where: str = ""

    def skip_reason(self, case: str, provider: str) -> str | None:
        return next((s.reason for s in self.skips if s.matches(case, provider)), None)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    factory: str
    inputs: tuple[InputSpec, ...] | str  # declared specs, or "module:callable"(seed) -> tuple of tensors
    exporter: str = "dynamo"
    opset: int | None = None
    seed: int = 0
    tolerance: Tolerance = Tolerance()
    layer_tolerances: tuple[LayerTolerance, ...] = ()
    reference_promotion: bool = True  # casts to float32/16 in the forward become float64 in the reference
    where: str = ""  # "tool.parity-gate.models[0]" for messages
    base: str = ""  # the configured model this case comes from (see cases)
    factory_seed: int | None = None  # the seed the factory runs under (None: seed); input sets vary only seed
    case: tuple[tuple[str, Any], ...] = ()  # what the case sets: (("batch", 8), ("opset", 17))
    dynamic_shapes: Mapping[str, Mapping[int, str]] = field(default_factory=dict)  # input -> {dim: name}
    transform: str | None = None  # "module:function", ModelProto -> ModelProto: what ships
    # What else the transform reads (globs of files under the config's folder, ``env:NAME``): then
    # its output is keyed and reused; None: it runs on every check.
    transform_inputs: tuple[str, ...] | None = None
    artifact: Path | None = None  # a prebuilt ONNX file gated instead of the gate's own export
    output_tolerance: tuple[float, float] | None = None  # (rtol, atol): allclose on the outputs gates
    sweep: SweepCase | None = None  # a case of a sweep: built from this instead of a factory
    gradients: bool = False  # also fingerprint parameter gradients of a seeded loss (grad:<name>)
    repeats: int | None = None  # timed runs per provider (median and p90); None: ONNX Runtime's 5 only
    detections: DetectionTolerance = DetectionTolerance()  # a detector's data-dependent outputs

    @property
    def export_key(self) -> tuple[Any, ...]:
        """What determines the exported graph: cases that agree on it share one export (they differ
        only in dimensions exported dynamic, or in input values)."""
        shapes: Any = self.inputs
        if isinstance(self.inputs, tuple):
            shapes = tuple((i.name, i.dtype, tuple("*" if d in self.dynamic_shapes.get(i.name, {}) else v
                                                   for d, v in enumerate(i.shape))) for i in self.inputs)
        dynamic = tuple((k, tuple(sorted(v.items()))) for k, v in sorted(self.dynamic_shapes.items()))
        return (self.base or self.name, self.factory, self.exporter, self.opset, self.transform,
                str(self.artifact), dynamic, shapes)

    def tolerance_for(self, layer: str, precision: str = "float32") -> Tolerance:
        tol = self.tolerance
        if precision in PRECISION_TOLERANCE:
            tol = tol.merged({k: max(v, getattr(tol, k)) for k, v in PRECISION_TOLERANCE[precision].items()})
        for rule in self.layer_tolerances:  # later rules win
            if fnmatchcase(layer, rule.pattern):
                tol = tol.merged(rule.overrides)
        return tol

    def unmatched(self, layers: Iterable[str]) -> tuple[LayerTolerance, ...]:
        """The ``layer-tolerances`` rules that match none of ``layers``: a misspelt glob leaves the
        default limits in force, unsaid."""
        names = list(layers)
        return tuple(r for r in self.layer_tolerances if not any(fnmatchcase(n, r.pattern) for n in names))


@dataclass(frozen=True)
class Isolation:
    """How ONNX Runtime providers run: each in a worker process with a timeout and budgets."""

    enabled: bool = True
    timeout_s: float = 600.0
    memory_mb: int | None = None  # address-space budget of the worker; None: unlimited
    capture_mb: int | None = 512  # marked intermediates held at once; past it the graph runs in segments


@dataclass(frozen=True)
class Config:
    path: Path
    root: Path  # the config file's folder; put on sys.path for factories
    baseline_dir: Path
    providers: tuple[ProviderSpec, ...]
    models: tuple[ModelSpec, ...]
    isolation: Isolation = Isolation()
    placement: str = "warn"  # a PR adds CPU fallbacks to an EP: "warn", "fail" or "off"
    max_slowdown: float | None = None  # fail when latency > (1 + this) x baseline; None: report only
    require: tuple[str, ...] = ()  # providers that must be available here (skipping them fails)
    allow_missing_gpu: bool = False  # a run whose GPU providers are all unavailable passes (else: fails)
    sweeps: tuple[Sweep, ...] = ()  # their cases are in ``models``, after the configured models

    def sweep_of(self, spec: ModelSpec) -> Sweep | None:
        if spec.sweep is None:
            return None
        return next((s for s in self.sweeps if s.name == spec.sweep.sweep), None)

    def skip_reason(self, model: str, provider: str) -> str | None:
        """Why a sweep's ``skip`` keeps ``provider`` off the case ``model`` (None: it runs)."""
        spec = next((m for m in self.models if m.name == model), None)
        sweep = self.sweep_of(spec) if spec is not None else None
        if sweep is None:
            return None
        reason = sweep.skip_reason(model, provider)
        return f"skipped by sweep `{sweep.name}`: {reason}" if reason else None

    def select_models(self, patterns: list[str] | None) -> tuple[ModelSpec, ...]:
        """Models whose name, or whose configured name (every case of it), matches a pattern
        (a name or a glob: ``resnet*``, ``bert.b8*``), in configured order."""
        if not patterns:
            return self.models
        chosen = []
        for pattern in patterns:
            hits = [m for m in self.models if fnmatchcase(m.name, pattern) or fnmatchcase(m.base, pattern)
                    or (m.sweep is not None and fnmatchcase(m.sweep.sweep, pattern))]
            if not hits:
                names = ", ".join(dict.fromkeys(m.sweep.sweep if m.sweep else m.base or m.name
                                                for m in self.models)) or "none"
                raise ConfigError(f"{self.path}: no model matches `{pattern}` (configured: {names})")
            chosen.extend(hits)
        return tuple(m for m in self.models if m in chosen)

    def select_providers(self, names: list[str] | None) -> tuple[ProviderSpec, ...]:
        if not names:
            return self.providers
        by_name = {p.name: p for p in self.providers}
        chosen = []
        for raw in names:
            name = canonical_provider(raw)
            chosen.append(by_name.get(name, ProviderSpec(name)))
        return tuple(chosen)
