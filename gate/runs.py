"""The data a run produces, independent of how it was produced: per model, the reference
layers (execution order) and, per provider, one entry per layer. Plain data, no torch, so
``compare`` and the baseline writer work anywhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gate.fingerprint import Fingerprint, relative_error


def error_against(fp: Fingerprint, ref: Fingerprint | None) -> float | None:
    """A runtime's relative L2 error against the reference layer (None: no comparable layer)."""
    if ref is None or tuple(fp.shape) != tuple(ref.shape):
        return None
    return relative_error(fp, ref)


@dataclass
class LayerInfo:
    name: str
    type: str
    fp: Fingerprint  # the reference's fingerprint
    noise: float | None = None  # run-to-run relative change measured by calibration


@dataclass
class ProviderLayer:
    status: str  # "ok" | "folded" | "absent"
    fp: Fingerprint | None = None
    err: float | None = None  # relative L2 error against the reference, estimated by the sketches
    reason: str | None = None
    noise: float | None = None  # run-to-run variation of err measured by calibration


@dataclass
class ProviderRun:
    name: str
    precision: str
    device: str
    status: str = "ok"  # "ok" | "skipped" | "error"
    reason: str | None = None
    error_status: str | None = None  # LOAD_FAIL, INFER_FAIL, ...
    layers: dict[str, ProviderLayer] = field(default_factory=dict)
    latency_ms: float | None = None
    placement: dict[str, Any] | None = None  # which nodes ran on the provider, which fell back
    capture_peak_bytes: int | None = None  # most marked-intermediate bytes held at once


@dataclass
class ModelRun:
    name: str
    meta: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, str] = field(default_factory=lambda: {"device": "cpu", "dtype": "float64"})
    layers: list[LayerInfo] = field(default_factory=list)
    providers: list[ProviderRun] = field(default_factory=list)
    error: dict[str, str] | None = None  # {"status": "EXPORT_FAIL", "message": ...}
    # layer -> where its value lives in the shipped ONNX graph: (kind, ref, reason), see layermap.Assignment
    onnx_map: dict[str, tuple[str, str | int | None, str | None]] = field(default_factory=dict)
