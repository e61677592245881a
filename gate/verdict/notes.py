"""What a verdict carries beside its rows: how many layers the shipped graph shows, the runtimes whose
release changed, a sweep's output comparisons and the root-cause hints, each with its JSON codec
(``gate.verdict.types`` holds them in ``ModelVerdict``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gate.core.fields import Obj
from gate.core.status import Check, ComparisonStatus


class Fields:
    """A record whose JSON object is its fields as they are."""

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class LayerMapping(Fields):
    """How many reference layers the shipped graph has a value for, and why the others have none."""

    layers: int
    mapped: int
    folded: int
    absent: int
    reasons: dict[str, int]  # why a layer is folded or absent -> how many (the 10 most common)

    @classmethod
    def from_dict(cls, o: Obj) -> LayerMapping:
        counts = {}
        for key in ("layers", "mapped", "folded", "absent"):
            if key not in o.data:
                o.fail(key, "expected a count, got nothing (missing)")
            value = o.int(key)
            if value is None or value < 0:
                o.fail(key, f"expected a count, got {'null' if value is None else value}")
            counts[key] = value
        return cls(reasons=o.counts("reasons"), **counts)

    @classmethod
    def read(cls, o: Obj) -> LayerMapping | None:
        """Nothing (an empty object: no layer map), or every count the comment prints."""
        return cls.from_dict(o) if o.data else None


@dataclass(frozen=True)
class VersionChange(Fields):
    """A runtime's release in the baseline and in this run, where they differ."""

    baseline: str
    run: str

    @classmethod
    def from_dict(cls, o: Obj) -> VersionChange:
        return cls(o.str("baseline"), o.str("run"))

    @classmethod
    def read_all(cls, o: Obj) -> dict[str, VersionChange]:
        """``{package: change}``, at most 8 packages, each name cut to 40 characters."""
        out = {}
        for k in list(o.data)[:8]:
            change = o.opt_obj(k, cls.from_dict) if o.data.get(k) is not None else None
            if change is not None:
                out[str(k)[:40]] = change
        return out


@dataclass
class Comparison(Fields):
    """A sweep's comparison of one case's outputs beyond the reference: ``pair`` (against the case
    ``other`` on the same ``provider``) or ``anchor`` (``provider`` against the provider ``other``)."""

    kind: Check  # PAIR | ANCHOR
    provider: str  # a runtime's column label, or "torch-cpu:float64" for the reference
    other: str
    error: float | None  # largest relative L2 difference of the outputs
    tolerance: float
    status: ComparisonStatus

    @classmethod
    def from_dict(cls, o: Obj) -> Comparison:
        return cls(kind=Check(o.choice("kind", (Check.PAIR.value, Check.ANCHOR.value))), provider=o.str("provider"),
                   other=o.str("other"), error=o.num("error"), tolerance=o.num("tolerance") or 0.0,
                   status=o.word("status", ComparisonStatus))


@dataclass
class Hint(Fields):
    """Why a layer regressed (never changes the verdict); ``evidence`` is plain JSON."""

    kind: str
    layer: str
    provider: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, o: Obj) -> Hint:
        return cls(kind=o.str("kind"), layer=o.str("layer", default=""), provider=o.str("provider", default=""),
                   message=o.str("message", default=""), evidence=o.free("evidence") or {})
