"""What a run produces, however it was produced: per model, the reference's layers in
execution order and, per target, one entry per layer. Plain data, no torch, so the verdict,
the baseline writer and the result files work anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from gate.core.detections import Detections
from gate.core.failure import ModelError
from gate.core.fields import Obj
from gate.core.reuse import Reuse
from gate.core.status import DataDependence, ErrorStatus, KeyPart, LayerStatus, RunStatus, SiteKind, SkipKind
from gate.core.target import Target
from gate.fingerprint import Fingerprint

OPTIONAL_META = ("promoted", "below_float64", "normalizations", "training", "dynamic_dims", "transform",
                 "graph_precision", "output_tolerance", "tensor_digests", "tensor_sums", "module_code",
                 "module_calls", "random_draws", "inputs", "content_key", "seconds")


@dataclass
class Meta:
    """Where a run came from: versions, exporter, digests, machine, fingerprint parameters.
    Every field may be None in a result file (an export that failed leaves most unknown);
    a baseline requires them (its schema says which)."""

    parity_gate: str | None = None
    torch: str | None = None
    onnx: str | None = None
    onnxruntime: str | None = None
    onnxscript: str | None = None
    exporter: str | None = None
    export_fallback: str | None = None
    opset: int | None = None
    inputs_digest: str | None = None
    weights_digest: str | None = None
    graph_digest: str | None = None
    machine: dict[str, str] | None = None
    fingerprint: dict[str, Any] | None = None
    op_types: list[str] | None = None  # ONNX op types of the shipped graph
    # The reference run: casts to a lower float dtype promoted to float64, per module call; and
    # where it still computed below float64 (custom ops, NumPy round trips), with the dtype.
    promoted: dict[str, int] | None = None
    below_float64: dict[str, str] | None = None
    narrowed: dict[str, int] | None = None  # of ``promoted``, the casts to float16/bfloat16
    normalizations: list[str] | None = None  # what the gate changed to run the model (eval mode, ...)
    training: dict[str, Any] | None = None  # modules left in training mode: did eval mode change outputs?
    dynamic_dims: dict[str, dict[str, str]] | None = None  # the shipped graph's dynamic input dimensions
    transform: str | None = None  # the post-export transform applied ("module:function")
    graph_precision: str | None = None  # what a transformed or prebuilt graph computes in
    lowered: list[str] | None = None  # what the shipped graph computes below float32 (``graph.lowered``)
    output_tolerance: list[float] | None = None  # [rtol, atol]: allclose on the outputs gates
    tensor_digests: dict[str, str] | None = None  # per parameter and buffer: which tensors a weights change touched
    tensor_sums: dict[str, str] | None = None  # per parameter and buffer: its values as a multiset
    # Per module: digests of its own code (where a refactor may move values), of where it called its children.
    module_code: dict[str, str] | None = None
    module_calls: dict[str, str] | None = None
    # The random operations the forward drew with, and where the user's code called them.
    random_draws: list[str] | None = None
    inputs: list[dict[str, Any]] | None = None  # per input: name, dtype, shape, digest (model.inputs.describe)
    content_key: dict[str, Any] | None = None  # what the run computed, digested (gate.pipeline.content_key)
    # Wall seconds the model took where its baseline was recorded (every stage, every provider): what
    # ``--shard`` balances the legs of a matrix by (gate.config.shards).
    seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if out["op_types"] is None:
            del out["op_types"]
        for key in OPTIONAL_META:  # absent when empty: files of models without them keep their bytes
            if not out[key]:
                del out[key]
        for key in ("lowered", "narrowed"):  # empty says "nothing below float32"; absent, "not recorded"
            if out[key] is None:
                del out[key]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Meta:
        return cls(**{f.name: d.get(f.name) for f in fields(cls)})


MAX_CANDIDATES = 16  # same-shaped values an absent layer may offer a capture to tell apart by numbers


@dataclass(frozen=True)
class OnnxSite:
    """Where a layer's value lives in the shipped ONNX graph."""

    kind: SiteKind
    value: str | None = None  # the ONNX value name ("value", and the lost value of "folded")
    output: int | None = None  # the graph-output index ("output")
    reason: str | None = None  # why "folded" / "absent"
    # "absent": the values its shape allows, none recorded as computing it; a capture takes the one
    # that holds torch's numbers (``gate.export.layermap.pick``), else it stays absent.
    candidates: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": str(self.kind), "value": self.value, "output": self.output, "reason": self.reason}
        return {**out, "candidates": list(self.candidates)} if self.candidates else out

    @classmethod
    def read(cls, o: Obj) -> OnnxSite:
        """A site from a file's map (``to_dict``), each field checked (``FormatError``)."""
        candidates = o.strs("candidates")
        if len(candidates) > MAX_CANDIDATES:
            o.fail("candidates", f"more than {MAX_CANDIDATES} values")
        return cls(o.word("kind", SiteKind), o.opt_str("value"), o.int("output"), o.opt_str("reason"),
                   tuple(candidates))


def sites_dict(sites: Mapping[str, OnnxSite]) -> dict[str, dict[str, Any]]:
    """A layer map as files hold it (``OnnxSite.read`` reads each site back)."""
    return {k: s.to_dict() for k, s in sites.items()}


@dataclass
class LayerInfo:
    """One layer of the reference run."""

    name: str
    type: str
    fp: Fingerprint
    noise: float | None = None  # run-to-run relative change measured by calibration
    reached: str = "float64"  # the coarsest precision the reference computed in up to this layer
    data_dependent: DataDependence | None = None  # its shape depends on the input's values (how we know)
    integer: bool = False  # integer or bool values (ids, a mask): no rounding moves them


@dataclass
class ProviderLayer:
    """One layer as a runtime saw it."""

    status: LayerStatus
    fp: Fingerprint | None = None
    err: float | None = None  # relative L2 error against the reference, estimated by the sketches
    reason: str | None = None
    noise: float | None = None  # run-to-run variation of err measured by calibration
    exact: dict[str, Any] | None = None  # a model output's exact metrics (gate.core.exact), full tensors
    detections: Detections | None = None  # a data-dependent output matched as detections (gate.core.detections)


@dataclass
class ProviderRun:
    target: Target
    status: RunStatus = RunStatus.OK
    reason: str | None = None
    error_status: ErrorStatus | None = None  # how it failed (status ERROR)
    layers: dict[str, ProviderLayer] = field(default_factory=dict)
    latency_ms: float | None = None  # median of the timed runs
    placement: dict[str, Any] | None = None  # which nodes ran on the provider, which fell back
    capture_peak_bytes: int | None = None  # most marked-intermediate bytes held at once
    session_options: dict[str, Any] | None = None  # the ONNX Runtime SessionOptions the config set
    latency_p90_ms: float | None = None  # 90th percentile of the timed runs, where `repeats` asked for them
    numerics: dict[str, str] | None = None  # PyTorch's TF32/cuDNN/matmul-precision settings (torch runners)
    skip: SkipKind | None = None  # why it did not run (status SKIPPED)
    where: str | None = None  # the user's frame that failed (status ERROR), where known
    trace: str | None = None  # the whole traceback (status ERROR, with --debug)

    @property
    def name(self) -> str:
        return self.target.provider

    @property
    def precision(self) -> str:
        return self.target.precision

    @classmethod
    def skipped(cls, target: Target, reason: str, skip: SkipKind = SkipKind.UNAVAILABLE) -> ProviderRun:
        return cls(target, RunStatus.SKIPPED, reason, skip=skip)

    @classmethod
    def failed(cls, target: Target, error_status: ErrorStatus, reason: str, where: str | None = None,
               trace: str | None = None) -> ProviderRun:
        return cls(target, RunStatus.ERROR, reason, ErrorStatus(error_status), where=where, trace=trace)


@dataclass(frozen=True)
class RunError:
    """Why a model failed: it failed to build, export or run, or no file holds it. Only an
    ``EXPORT_FAIL`` leaves a run behind (``ModelRun.unexported``): the PyTorch side needs no graph."""

    error_status: ErrorStatus
    message: str
    where: str | None = None  # the user's frame that failed, where known
    trace: str | None = None  # the whole traceback, with --debug
    newer: bool = False  # BAD_BASELINE: the file is a newer parity-gate's (upgrading reads it)
    repair: str | None = None  # BAD_BASELINE: the command that restores a damaged or foreign file
    # BAD_BASELINE for other inputs: what else of the model changed since it (a re-record takes it too)
    changed: tuple[KeyPart, ...] = ()

    @classmethod
    def of(cls, exc: ModelError) -> RunError:
        return cls(exc.error_status, str(exc), exc.where, exc.trace)

    def to_dict(self) -> dict[str, Any]:
        """As the JSON report writes it (absent where empty)."""
        optional = (("where", self.where), ("trace", self.trace), ("newer", self.newer),
                    ("repair", self.repair))
        return {"status": self.error_status, "message": self.message, **{k: v for k, v in optional if v},
                **({"changed": [str(p) for p in self.changed]} if self.changed else {})}

    @classmethod
    def from_dict(cls, e: Obj) -> RunError:
        return cls(e.word("status", ErrorStatus), e.str("message", default=""), e.opt_str("where"),
                   e.opt_str("trace"), e.bool("newer"), e.opt_str("repair"),
                   tuple(e.word_list("changed", KeyPart)))


@dataclass
class ModelRun:
    name: str
    meta: Meta = field(default_factory=Meta)
    reference_dtype: str = "float64"  # "float32" when the model cannot run in float64
    layers: list[LayerInfo] = field(default_factory=list)
    providers: list[ProviderRun] = field(default_factory=list)
    error: RunError | None = None
    onnx_map: dict[str, OnnxSite] = field(default_factory=dict)
    reuse: Reuse | None = None  # what ``check`` took from the baseline and the export cache, and why
    first_use: dict[str, str] = field(default_factory=dict)  # tensor -> the module that first read it

    def provider(self, target: Target) -> ProviderRun | None:
        return next((p for p in self.providers if p.target == target), None)

    @property
    def unexported(self) -> bool:
        """The shipped graph could not be made (``error`` says why) yet the reference ran: the
        PyTorch providers are judged, and only the ONNX Runtime rows are not checked."""
        return self.error is not None and self.error.error_status == ErrorStatus.EXPORT_FAIL and bool(self.layers)


def latency(times_ms: list[float]) -> tuple[float | None, float | None]:
    """(median, 90th percentile) of timed runs in milliseconds; (None, None) when none ran."""
    if not times_ms:
        return None, None
    import numpy as np

    return float(np.median(times_ms)), float(np.percentile(times_ms, 90))
