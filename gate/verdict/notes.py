"""What a verdict carries beside its rows: a sweep's output comparisons and the root-cause hints,
each with its JSON codec (``gate.verdict.types`` holds them in ``ModelVerdict``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gate.core.fields import Obj
from gate.core.status import Check, ComparisonStatus


@dataclass
class Comparison:
    """A sweep's comparison of one case's outputs beyond the reference: ``pair`` (against the case
    ``other`` on the same ``provider``) or ``anchor`` (``provider`` against the provider ``other``)."""

    kind: Check  # PAIR | ANCHOR
    provider: str  # a runtime's column label, or "torch-cpu:float64" for the reference
    other: str
    error: float | None  # largest relative L2 difference of the outputs
    tolerance: float
    status: ComparisonStatus

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "provider": self.provider, "other": self.other, "error": self.error,
                "tolerance": self.tolerance, "status": self.status}

    @classmethod
    def from_dict(cls, o: Obj) -> Comparison:
        return cls(kind=Check(o.choice("kind", (Check.PAIR.value, Check.ANCHOR.value))), provider=o.str("provider"),
                   other=o.str("other"), error=o.num("error"), tolerance=o.num("tolerance") or 0.0,
                   status=o.word("status", ComparisonStatus))


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
        return cls(kind=o.str("kind"), layer=o.str("layer", default=""), provider=o.str("provider", default=""),
                   message=o.str("message", default=""), evidence=o.free("evidence") or {})
