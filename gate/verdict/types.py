"""The verdict as types, each with its JSON codec beside it: ``to_dict`` writes the report contract
(docs/formats.md#json-report-schema-version-1), ``from_dict`` checks every field it reads, since a
report may come from an untrusted run (a fork's). Rows, regressions and audits: ``gate.verdict.rows``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gate.core.fields import Obj
from gate.core.reuse import Reuse
from gate.core.runs import RunError
from gate.core.status import (
    AUDITS,
    AuditStatus,
    Check,
    ErrorStatus,
    ModelStatus,
    Role,
    RowStatus,
    SkipKind,
    TargetStatus,
    Verdict,
)
from gate.verdict.notes import Comparison, Fields, Hint, LayerMapping, VersionChange
from gate.verdict.rows import Audit, Regression, Row
from gate.verdict.shard import ShardRun

SCHEMA, VERSION = "parity-gate/report", 1


@dataclass
class ProviderVerdict:
    """One target of one model: the reference (role ``reference``) or a runtime."""

    name: str
    role: Role
    precision: str
    label: str  # the target's label (device class, `:precision` unless float32); "cpu" for the reference
    status: TargetStatus = TargetStatus.PASS
    reason: str | None = None
    error_status: ErrorStatus | None = None  # how it failed (status ERROR)
    latency_ms: float | None = None
    baseline_latency_ms: float | None = None
    first_regression: Regression | None = None
    rows: list[Row] = field(default_factory=list)
    audits: list[Audit] = field(default_factory=list)
    placement: dict[str, Any] | None = None
    capture_peak_mb: float | None = None
    latency_p90_ms: float | None = None  # with `repeats`: the 90th percentile beside the median
    skip: SkipKind | None = None  # why it did not run (status SKIPPED)
    where: str | None = None  # the user's frame that failed (status ERROR), where known
    trace: str | None = None  # the whole traceback (status ERROR, with --debug)

    @property
    def checked(self) -> int:
        return sum(r.checked for r in self.rows)

    @property
    def audit_only(self) -> bool:
        """Whether what failed is an audit of the whole target (latency, placement, ...), no layer."""
        return self.first_regression is not None and self.first_regression.check in AUDITS

    @property
    def limits_only(self) -> bool:
        """Whether only a configured limit failed, no error having moved: every failed row is
        ``output-tolerance``'s allclose (it replaces only a row that passed) or a ceiling over an error
        within its baseline budget (growth is judged first), and no audit failed."""
        failed = [r for r in self.rows if r.failed]
        limit = [r.check == Check.ALLCLOSE or (r.check == Check.CEILING and r.baseline is not None)
                 for r in failed]
        return bool(failed) and all(limit) and not any(a.status == AuditStatus.FAIL for a in self.audits)

    @property
    def failed(self) -> int:
        return sum(r.failed for r in self.rows)

    @property
    def folded(self) -> int:
        return sum(r.status == RowStatus.FOLDED for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "precision": self.precision, "device": self.label,
                "status": self.status, "reason": self.reason, "error_status": self.error_status,
                "latency_ms": self.latency_ms, "baseline_latency_ms": self.baseline_latency_ms,
                "first_regression": None if self.first_regression is None else self.first_regression.to_dict(),
                "checked": self.checked, "failed": self.failed, "folded": self.folded,
                "layers": [r.to_dict() for r in self.rows], "audits": [a.to_dict() for a in self.audits],
                "placement": self.placement, "capture_peak_mb": self.capture_peak_mb,
                **({"latency_p90_ms": self.latency_p90_ms} if self.latency_p90_ms is not None else {}),
                **({"skip": self.skip} if self.skip is not None else {}),
                **{k: v for k, v in (("where", self.where), ("trace", self.trace)) if v}}

    @classmethod
    def from_dict(cls, o: Obj) -> ProviderVerdict:
        return cls(name=o.str("name"), role=o.word("role", Role, default=Role.RUNTIME),
                   precision=o.str("precision", default=""), label=o.str("device", default=""),
                   status=o.word("status", TargetStatus), reason=o.opt_str("reason"),
                   error_status=o.opt_word("error_status", ErrorStatus), latency_ms=o.num("latency_ms"),
                   baseline_latency_ms=o.num("baseline_latency_ms"),
                   first_regression=o.opt_obj("first_regression", Regression.from_dict),
                   rows=o.objs("layers", Row.from_dict), audits=o.objs("audits", Audit.from_dict),
                   placement=o.free("placement"), capture_peak_mb=o.num("capture_peak_mb"),
                   latency_p90_ms=o.num("latency_p90_ms"), skip=o.opt_word("skip", SkipKind),
                   where=o.opt_str("where"), trace=o.opt_str("trace"))


@dataclass
class ModelVerdict:
    name: str
    status: ModelStatus = ModelStatus.PASS
    error: RunError | None = None  # the model failed to build, export or run, or no file holds it
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
    mapping: LayerMapping | None = None  # how many layers the shipped graph lets us see
    # The runtimes whose release differs from the baseline's.
    versions: dict[str, VersionChange] = field(default_factory=dict)
    sweep: str | None = None  # the sweep this model is a case of
    comparisons: list[Comparison] = field(default_factory=list)  # the sweep's pairs and anchor
    update_command: str | None = None  # the command that re-creates this model's baseline
    reuse: Reuse | None = None  # what the check took from the baseline and the export cache, and why
    unrecorded: list[str] = field(default_factory=list)  # runtimes not run here, with no entry anywhere
    loosened: Loosened | None = None  # what the change's config stopped judging (``check --changed-since``)
    restore: str | None = None  # the base its baseline file is restored from: the change deleted or damaged it
    unowned: list[str] = field(default_factory=list)  # no baseline: files no model owns (its own, renamed?)
    moved_from: str | None = None  # no baseline: its file, where the base's ``baseline-dir`` left it

    @property
    def not_checked(self) -> list[ProviderVerdict]:
        """Targets left without a graph to run because the export failed (each row says why)."""
        return [p for p in self.providers if p.status == TargetStatus.ERROR and p.error_status == ErrorStatus.EXPORT_FAIL]

    @property
    def refused(self) -> bool:
        """Its baseline file cannot judge it (exit 2, a file-format error), whether it ran or not."""
        return self.error is not None and self.error.error_status == ErrorStatus.BAD_BASELINE

    @property
    def judged(self) -> list[ProviderVerdict]:
        return [p for p in self.providers if p.status in (TargetStatus.PASS, TargetStatus.REGRESSED)]

    @property
    def recreate(self) -> str:
        """``update_command``, or the plain command where a report from an older writer lacks it."""
        return self.update_command or f"parity-gate update-baseline --model {self.name}"

    def to_dict(self) -> dict[str, Any]:
        # Each absent where empty (a reuse is never): reports without them keep their bytes.
        extra = {"versions": {k: v.to_dict() for k, v in self.versions.items()}, "sweep": self.sweep,
                 "comparisons": [c.to_dict() for c in self.comparisons], "unowned": self.unowned,
                 "update_command": self.update_command, "unrecorded": self.unrecorded,
                 "reuse": self.reuse.to_dict() if self.reuse is not None else None, "restore": self.restore,
                 "loosened": self.loosened and self.loosened.to_dict(), "moved_from": self.moved_from}
        return {"name": self.name, "status": self.status, "error": self.error and self.error.to_dict(),
                "baseline": {"path": self.baseline_path, "exists": self.baseline_exists},
                "exporter": self.exporter, "export_fallback": self.export_fallback, "opset": self.opset,
                "reference": {"device": "cpu", "dtype": self.reference_dtype, "promoted": self.promoted,
                              "below_float64": self.below_float64}, "layers": self.layers,
                "first_regression": None if self.first_regression is None else self.first_regression.to_dict(),
                "providers": [p.to_dict() for p in self.providers], "message": self.message,
                "audits": [a.to_dict() for a in self.audits],
                "mapping": self.mapping.to_dict() if self.mapping else {},
                "hints": [h.to_dict() for h in self.hints], **{k: v for k, v in extra.items() if v}}

    @classmethod
    def from_dict(cls, o: Obj) -> ModelVerdict:
        error = o.opt_obj("error", RunError.from_dict)
        path, exists = o.opt_obj("baseline", lambda b: (b.str("path", default=""), b.bool("exists"))) or ("", False)
        reference = o.opt_obj("reference", lambda r: (r.str("dtype", default="float64"), r.counts("promoted"),
                                                      r.words("below_float64")))
        dtype, promoted, below = reference or ("float64", {}, {})
        return cls(name=o.str("name"), status=o.word("status", ModelStatus), error=error, baseline_path=path,
                   baseline_exists=exists, exporter=o.opt_str("exporter"), export_fallback=o.opt_str("export_fallback"),
                   opset=o.int("opset"), reference_dtype=dtype, layers=o.int("layers") or 0,
                   first_regression=o.opt_obj("first_regression", Regression.from_dict),
                   providers=o.objs("providers", ProviderVerdict.from_dict), message=o.opt_str("message"),
                   hints=o.objs("hints", Hint.from_dict), promoted=promoted, below_float64=below,
                   audits=o.objs("audits", Audit.from_dict), mapping=o.opt_obj("mapping", LayerMapping.read),
                   versions=o.opt_obj("versions", VersionChange.read_all) or {}, sweep=o.opt_str("sweep"),
                   comparisons=o.objs("comparisons", Comparison.from_dict),
                   update_command=o.opt_str("update_command"), reuse=o.opt_obj("reuse", Reuse.from_dict),
                   unrecorded=o.strs("unrecorded")[:64], loosened=o.opt_obj("loosened", Loosened.from_dict),
                   restore=o.opt_str("restore"), unowned=o.strs("unowned")[:64],
                   moved_from=o.opt_str("moved_from"))


@dataclass(frozen=True)
class Loosened:
    """What the change's config stopped judging that the base's judges."""

    first: Regression | None = None  # where the base's limits fail the model
    dropped: tuple[str, ...] = ()  # providers (and latencies) the base checks and the change does not
    unread: str | None = None  # why the base's config could not be read
    off: tuple[str, ...] = ()  # what the run checks that the base's config turns on and the change's off

    def to_dict(self) -> dict[str, Any]:
        extra = {"unread": self.unread, "off": list(self.off)}  # each absent where empty
        return {"first": self.first.to_dict() if self.first else None, "dropped": list(self.dropped),
                **{k: v for k, v in extra.items() if v}}

    @classmethod
    def from_dict(cls, o: Obj) -> Loosened:
        return cls(o.opt_obj("first", Regression.from_dict), tuple(o.strs("dropped")[:64]),
                   o.opt_str("unread"), tuple(o.strs("off")[:8]))


@dataclass
class Summary(Fields):
    models: int
    layers: int
    providers: list[str]
    regressions: int
    errors: int

    @classmethod
    def of(cls, models: list[ModelVerdict]) -> Summary:
        return cls(models=len(models), layers=sum(m.layers for m in models),
                   providers=sorted({p.name for m in models for p in m.providers if p.role == Role.RUNTIME}),
                   regressions=sum(p.failed for m in models for p in m.providers),
                   errors=sum(m.status == ModelStatus.ERROR for m in models))

    @classmethod
    def from_dict(cls, o: Obj) -> Summary:
        return cls(models=o.int("models") or 0, layers=o.int("layers") or 0, providers=o.strs("providers"),
                   regressions=o.int("regressions") or 0, errors=o.int("errors") or 0)


@dataclass
class Report:
    verdict: Verdict
    models: list[ModelVerdict]
    environment: dict[str, Any] = field(default_factory=dict)
    first_regression: Regression | None = None
    summary: Summary | None = None
    baseline_changes: list[str] | None = None
    baseline_diffs: dict[str, str] | None = None  # by path (--changed-since); shown: the PR's own files
    baseline_loosened: list[str] | None = None  # of those files, the ones whose rewrite loosened a limit
    shard: ShardRun | None = None  # a leg of a sharded run: its shard, and what the run covers (check --shard)
    unchecked: list[str] | None = None  # models, cases the base's config checks and the change's not
    baseline_dropped: list[str] | None = None  # of baseline_changes: deleted, of a model no longer configured
    unowned: list[str] | None = None  # baseline files left in place that no configured model owns

    def __post_init__(self) -> None:
        self.summary = self.summary or Summary.of(self.models)

    @property
    def exit_code(self) -> int:
        """The verdict's code; 2 where a model's baseline file could not judge it (the others are judged)."""
        return 2 if any(m.refused for m in self.models) else Verdict(self.verdict).exit_code

    def to_dict(self) -> dict[str, Any]:
        extra = {"baseline_diffs": self.baseline_diffs, "baseline_loosened": self.baseline_loosened,
                 "unchecked": self.unchecked, "baseline_dropped": self.baseline_dropped,
                 "unowned": self.unowned, "shard": self.shard.to_dict() if self.shard else None}
        return {"schema": SCHEMA, "version": VERSION, "verdict": self.verdict,
                "first_regression": self.first_regression.to_dict() if self.first_regression else None,
                "summary": (self.summary or Summary.of(self.models)).to_dict(),
                "environment": self.environment, "models": [m.to_dict() for m in self.models],
                **({"baseline_changes": self.baseline_changes} if self.baseline_changes is not None else {}),
                **{k: v for k, v in extra.items() if v}}  # each absent where empty

    @classmethod
    def from_dict(cls, o: Obj) -> Report:
        o.expect("schema", SCHEMA)
        version = o.int("version")
        if version != VERSION:
            o.fail("version", f"{version!r} is not supported (this parity-gate reads {VERSION})")
        first = o.opt_obj("first_regression", Regression.from_dict)
        if first is not None and (first.model is None or first.provider is None):
            o.fail("first_regression", "must name its `model` and `provider`")
        return cls(verdict=o.word("verdict", Verdict), models=o.objs("models", ModelVerdict.from_dict, required=True),
                   environment=o.free("environment") or {}, first_regression=first,
                   summary=o.opt_obj("summary", Summary.from_dict),
                   baseline_changes=o.strs("baseline_changes") if o.has("baseline_changes") else None,
                   baseline_diffs=o.words("baseline_diffs") or None, unchecked=o.strs("unchecked")[:256] or None,
                   baseline_loosened=o.strs("baseline_loosened")[:256] or None,
                   baseline_dropped=o.strs("baseline_dropped")[:256] or None,
                   unowned=o.strs("unowned")[:256] or None,
                   shard=o.opt_obj("shard", ShardRun.from_dict))
