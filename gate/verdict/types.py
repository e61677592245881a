"""The verdict as types: layer rows, audits, regressions, per-target and per-model verdicts,
the report. Each answers for itself (``Row.failed``, ``ProviderVerdict.status``) and carries
its JSON codec beside it: ``to_dict`` writes the report contract (docs/formats.md), and
``from_dict`` reads one back, checking every field it uses, so a report from an untrusted run
(a fork's, in the fork-safe flow) is either a well-typed ``Report`` or one error naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gate.formats.fields import Obj

SCHEMA, VERSION = "parity-gate/report", 1
VERDICTS = ("pass", "regressed", "error")
MODEL_STATUSES = ("pass", "regressed", "no-baseline", "error")
TARGET_STATUSES = ("pass", "regressed", "no-baseline", "skipped", "error")
ROW_STATUSES = ("pass", "fail", "new", "missing", "folded", "absent")
ROLES = ("reference", "runtime")
# The exit code of each verdict (2 is a usage, configuration or file-format error).
EXIT = {"pass": 0, "regressed": 1, "error": 3}


@dataclass
class Row:
    """One layer of one target: the check that judged it and what it measured."""

    layer: str
    type: str
    status: str  # see ROW_STATUSES
    check: str | None = None
    value: float | None = None
    threshold: float | None = None
    baseline: float | None = None
    message: str | None = None
    exact: dict[str, Any] | None = None  # a model output's exact metrics (full tensors), where measured

    @property
    def failed(self) -> bool:
        """A failed check, or a layer the baseline does not know / no longer sees. A runtime
        row that is merely new to the baseline (no recorded error yet) is not a failure."""
        return self.status in ("fail", "missing") or (self.status == "new" and self.check == "structure")

    @property
    def checked(self) -> bool:
        return self.status in ("pass", "fail")

    def to_dict(self) -> dict[str, Any]:
        out = {"layer": self.layer, "type": self.type, "status": self.status, "check": self.check,
               "value": self.value, "threshold": self.threshold, "baseline": self.baseline, "message": self.message}
        if self.exact is not None:
            out["exact"] = self.exact
        return out

    @classmethod
    def from_dict(cls, o: Obj) -> Row:
        return cls(o.str("layer"), o.str("type", default=""), o.choice("status", ROW_STATUSES),
                   o.opt_str("check"), o.num("value"), o.num("threshold"), o.num("baseline"),
                   o.opt_str("message"), o.free("exact"))


@dataclass
class Regression:
    """The first failing layer of a target (``provider``/``precision`` set at model level,
    ``model`` too at report level)."""

    layer: str
    type: str
    check: str
    value: float | None = None
    threshold: float | None = None
    message: str | None = None
    provider: str | None = None
    precision: str | None = None
    model: str | None = None

    @classmethod
    def of(cls, row: Row) -> Regression:
        return cls(row.layer, row.type, row.check or "", row.value, row.threshold, row.message)

    def to_dict(self) -> dict[str, Any]:
        head = {k: v for k, v in (("model", self.model), ("provider", self.provider),
                                  ("precision", self.precision)) if v is not None}
        return {**head, "layer": self.layer, "type": self.type, "check": self.check, "value": self.value,
                "threshold": self.threshold, "message": self.message}

    @classmethod
    def from_dict(cls, o: Obj) -> Regression:
        return cls(o.str("layer"), o.str("type", default=""), o.str("check"), o.num("value"), o.num("threshold"),
                   o.opt_str("message"), o.opt_str("provider"), o.opt_str("precision"), o.opt_str("model"))


@dataclass
class Audit:
    """A check of a whole target or model: CPU fallbacks added (``placement``), a slowdown
    (``latency``), dynamic dimensions the export made static (``dynamic-shape``), modules left in
    training mode that change the outputs (``training-mode``, at ``layer``)."""

    check: str
    status: str  # "warn" | "fail"
    message: str
    layer: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"check": self.check, "status": self.status, "message": self.message}
        if self.layer is not None:
            out["layer"] = self.layer
        return out

    @classmethod
    def from_dict(cls, o: Obj) -> Audit:
        return cls(o.str("check"), o.choice("status", ("warn", "fail")), o.str("message", default=""),
                   o.opt_str("layer"))


@dataclass
class ProviderVerdict:
    """One target of one model: the reference (role ``reference``) or a runtime."""

    name: str
    role: str
    precision: str
    device: str
    status: str = "pass"  # see TARGET_STATUSES
    reason: str | None = None
    error_status: str | None = None
    latency_ms: float | None = None
    baseline_latency_ms: float | None = None
    first_regression: Regression | None = None
    rows: list[Row] = field(default_factory=list)
    audits: list[Audit] = field(default_factory=list)
    placement: dict[str, Any] | None = None
    capture_peak_mb: float | None = None

    @property
    def checked(self) -> int:
        return sum(r.checked for r in self.rows)

    @property
    def failed(self) -> int:
        return sum(r.failed for r in self.rows)

    @property
    def folded(self) -> int:
        return sum(r.status == "folded" for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "precision": self.precision, "device": self.device,
                "status": self.status, "reason": self.reason, "error_status": self.error_status,
                "latency_ms": self.latency_ms, "baseline_latency_ms": self.baseline_latency_ms,
                "first_regression": None if self.first_regression is None else self.first_regression.to_dict(),
                "checked": self.checked, "failed": self.failed, "folded": self.folded,
                "layers": [r.to_dict() for r in self.rows], "audits": [a.to_dict() for a in self.audits],
                "placement": self.placement, "capture_peak_mb": self.capture_peak_mb}

    @classmethod
    def from_dict(cls, o: Obj) -> ProviderVerdict:
        return cls(o.str("name"), o.choice("role", ROLES, default="runtime"), o.str("precision", default=""),
                   o.str("device", default=""), o.choice("status", TARGET_STATUSES), o.opt_str("reason"),
                   o.opt_str("error_status"), o.num("latency_ms"), o.num("baseline_latency_ms"),
                   o.opt_obj("first_regression", Regression.from_dict), o.objs("layers", Row.from_dict),
                   o.objs("audits", Audit.from_dict), o.free("placement"), o.num("capture_peak_mb"))


@dataclass
class Hint:
    """Why a layer regressed (never changes the verdict); ``evidence`` is plain JSON."""

    kind: str
    layer: str
    provider: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "layer": self.layer, "provider": self.provider, "message": self.message,
                "evidence": self.evidence}

    @classmethod
    def from_dict(cls, o: Obj) -> Hint:
        return cls(o.str("kind"), o.str("layer", default=""), o.str("provider", default=""),
                   o.str("message", default=""), o.free("evidence") or {})


@dataclass
class ModelVerdict:
    name: str
    status: str = "pass"  # see MODEL_STATUSES
    error: dict[str, str] | None = None  # {"status": "EXPORT_FAIL", "message": ...}
    baseline_path: str = ""
    baseline_exists: bool = False
    exporter: str | None = None
    export_fallback: str | None = None
    opset: int | None = None
    reference_dtype: str = "float64"
    layers: int = 0
    first_regression: Regression | None = None
    providers: list[ProviderVerdict] = field(default_factory=list)
    message: str | None = None
    hints: list[Hint] = field(default_factory=list)
    # The reference run: casts promoted to float64 per module call; where it computed below float64.
    promoted: dict[str, int] = field(default_factory=dict)
    below_float64: dict[str, str] = field(default_factory=dict)
    audits: list[Audit] = field(default_factory=list)  # of the model and its export, beside the targets'
    mapping: dict[str, Any] = field(default_factory=dict)  # how many layers the shipped graph lets us see
    # Runtimes whose version differs from the baseline's: {"onnxruntime": {"baseline": v0, "run": v1}}.
    versions: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = self._to_dict()
        if self.versions:  # absent when nothing differs: such reports keep their bytes
            out["versions"] = self.versions
        return out

    def _to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "error": self.error,
                "baseline": {"path": self.baseline_path, "exists": self.baseline_exists},
                "exporter": self.exporter, "export_fallback": self.export_fallback, "opset": self.opset,
                "reference": {"device": "cpu", "dtype": self.reference_dtype, "promoted": self.promoted,
                              "below_float64": self.below_float64},
                "layers": self.layers,
                "first_regression": None if self.first_regression is None else self.first_regression.to_dict(),
                "providers": [p.to_dict() for p in self.providers], "message": self.message,
                "audits": [a.to_dict() for a in self.audits], "mapping": self.mapping,
                "hints": [h.to_dict() for h in self.hints]}

    @classmethod
    def from_dict(cls, o: Obj) -> ModelVerdict:
        error = o.opt_obj("error", lambda e: {"status": e.str("status"), "message": e.str("message", default="")})
        baseline = o.opt_obj("baseline", lambda b: (b.str("path", default=""), b.bool("exists")))
        reference = o.opt_obj("reference", lambda r: (r.str("dtype", default="float64"), r.counts("promoted"),
                                                      r.words("below_float64")))
        dtype, promoted, below = reference or ("float64", {}, {})
        versions = o.opt_obj("versions", _versions) or {}
        return cls(o.str("name"), o.choice("status", MODEL_STATUSES), error,
                   *(baseline or ("", False)), o.opt_str("exporter"), o.opt_str("export_fallback"),
                   o.int("opset"), dtype, o.int("layers") or 0,
                   o.opt_obj("first_regression", Regression.from_dict), o.objs("providers", ProviderVerdict.from_dict),
                   o.opt_str("message"), o.objs("hints", Hint.from_dict), promoted, below,
                   o.objs("audits", Audit.from_dict), o.free("mapping") or {}, versions)


def _versions(o: Obj) -> dict[str, dict[str, str]]:
    return {str(k)[:40]: o.opt_obj(k, lambda v: {"baseline": v.str("baseline"), "run": v.str("run")})
            for k in list(o.data)[:8] if o.data.get(k) is not None}


@dataclass
class Summary:
    models: int
    layers: int
    providers: list[str]
    regressions: int
    errors: int

    def to_dict(self) -> dict[str, Any]:
        return {"models": self.models, "layers": self.layers, "providers": self.providers,
                "regressions": self.regressions, "errors": self.errors}

    @classmethod
    def of(cls, models: list[ModelVerdict]) -> Summary:
        return cls(len(models), sum(m.layers for m in models),
                   sorted({p.name for m in models for p in m.providers if p.role == "runtime"}),
                   sum(p.failed for m in models for p in m.providers), sum(m.status == "error" for m in models))

    @classmethod
    def from_dict(cls, o: Obj) -> Summary:
        return cls(o.int("models") or 0, o.int("layers") or 0, o.strs("providers"), o.int("regressions") or 0,
                   o.int("errors") or 0)


@dataclass
class Report:
    verdict: str  # see VERDICTS
    models: list[ModelVerdict]
    environment: dict[str, Any] = field(default_factory=dict)
    first_regression: Regression | None = None
    summary: Summary | None = None
    baseline_changes: list[str] | None = None

    def __post_init__(self) -> None:
        if self.summary is None:
            self.summary = Summary.of(self.models)

    @property
    def exit_code(self) -> int:
        return EXIT[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        out = {"schema": SCHEMA, "version": VERSION, "verdict": self.verdict,
               "first_regression": None if self.first_regression is None else self.first_regression.to_dict(),
               "summary": self.summary.to_dict(), "environment": self.environment,
               "models": [m.to_dict() for m in self.models]}
        if self.baseline_changes is not None:
            out["baseline_changes"] = self.baseline_changes
        return out

    @classmethod
    def from_dict(cls, o: Obj) -> Report:
        o.expect("schema", SCHEMA)
        version = o.int("version")
        if version != VERSION:
            o.fail("version", f"{version!r} is not supported (this parity-gate reads {VERSION})")
        changes = o.strs("baseline_changes") if o.has("baseline_changes") else None
        first = o.opt_obj("first_regression", Regression.from_dict)
        if first is not None and (first.model is None or first.provider is None):
            o.fail("first_regression", "must name its `model` and `provider`")
        return cls(o.choice("verdict", VERDICTS), o.objs("models", ModelVerdict.from_dict, required=True),
                   o.free("environment") or {}, first, o.opt_obj("summary", Summary.from_dict), changes)
