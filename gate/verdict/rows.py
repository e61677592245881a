"""The leaf types of the verdict, each with its JSON codec (``gate.verdict.types`` holds the rest): a
target's row, the regression one names, an audit of a target or model. ``from_dict`` checks every field
it reads: a report may come from an untrusted run (a fork's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.core.fields import Obj
from gate.core.status import NOT_AN_ERROR, AuditStatus, Check, DataDependence, RowStatus


@dataclass
class Row:
    """One layer of one target: the check that judged it and what it measured."""

    layer: str
    type: str
    status: RowStatus
    check: Check | str | None = None  # a Check; a report from a newer writer may name others
    value: float | None = None
    threshold: float | None = None
    baseline: float | None = None
    message: str | None = None
    exact: dict[str, Any] | None = None  # a model output's exact metrics (full tensors), where measured
    data_dependent: DataDependence | str | None = None  # its shape depends on values; ``check`` is the rule
    # ``value`` is the RMS of the difference: the reference is all zeros (no relative error)
    absolute: bool = False

    @property
    def failed(self) -> bool:
        return self.status == RowStatus.FAIL

    @property
    def checked(self) -> bool:
        return self.status in (RowStatus.PASS, RowStatus.FAIL, RowStatus.FOLLOWS)

    @property
    def error(self) -> float | None:
        """``value`` where it is an error against the reference (or its drift), else None (NOT_AN_ERROR)."""
        return None if self.check in NOT_AN_ERROR else self.value

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "type": self.type, "status": self.status, "check": self.check,
                "value": self.value, "threshold": self.threshold, "baseline": self.baseline,
                "message": self.message, **({"exact": self.exact} if self.exact is not None else {}),
                **({"data_dependent": self.data_dependent} if self.data_dependent is not None else {}),
                **({"absolute": True} if self.absolute else {})}

    @classmethod
    def from_dict(cls, o: Obj) -> Row:
        dependent = o.opt_str("data_dependent")
        return cls(layer=o.str("layer"), type=o.str("type", default=""), status=o.word("status", RowStatus),
                   check=None if (c := o.opt_str("check")) is None else _check(c), value=o.num("value"),
                   threshold=o.num("threshold"), baseline=o.num("baseline"), message=o.opt_str("message"),
                   exact=o.free("exact"), absolute=o.bool("absolute"),
                   data_dependent=DataDependence(dependent) if dependent in DataDependence.values()
                   else dependent)


def _check(name: str) -> Check | str:
    """A check's name as its member; a name this version does not know stays text."""
    return Check(name) if name in Check.values() else name


@dataclass
class Regression:
    """A target's first failing layer (``provider``, ``precision``: in a model; ``model``: in a report)."""

    layer: str
    type: str
    check: Check | str
    value: float | None = None
    threshold: float | None = None
    message: str | None = None
    provider: str | None = None
    precision: str | None = None
    model: str | None = None
    # On a runtime: the layers this value also computes, folded into it by the exporter or the provider
    # (a Conv whose BatchNorm was fused into it has no value of its own; the fused node gives the
    # BatchNorm's).
    fused: tuple[str, ...] = ()

    @classmethod
    def of(cls, row: Row, fused: tuple[str, ...] = ()) -> Regression:
        return cls(layer=row.layer, type=row.type, check=row.check or "", value=row.value,
                   threshold=row.threshold, message=row.message, fused=fused)

    def to_dict(self) -> dict[str, Any]:
        head = {k: v for k, v in (("model", self.model), ("provider", self.provider),
                                  ("precision", self.precision)) if v is not None}
        return {**head, "layer": self.layer, "type": self.type, "check": self.check, "value": self.value,
                "threshold": self.threshold, "message": self.message,
                **({"fused": list(self.fused)} if self.fused else {})}

    @classmethod
    def from_dict(cls, o: Obj) -> Regression:
        return cls(layer=o.str("layer"), type=o.str("type", default=""), check=_check(o.str("check")),
                   value=o.num("value"), threshold=o.num("threshold"), message=o.opt_str("message"),
                   provider=o.opt_str("provider"), precision=o.opt_str("precision"), model=o.opt_str("model"),
                   fused=tuple(o.strs("fused")[:16]))

    @property
    def where(self) -> str:
        """The layer, and what its value also computes: ``bn1 (with conv1, folded into it)``."""
        return self.layer + (f" (with {', '.join(self.fused)}, folded into it)" if self.fused else "")


@dataclass
class Audit:
    """A check of a whole target or model (``placement``, ``latency``, ``dynamic-shape``, ...)."""

    check: Check | str
    status: AuditStatus
    message: str
    layer: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "message": self.message,
                **({"layer": self.layer} if self.layer is not None else {})}

    @classmethod
    def from_dict(cls, o: Obj) -> Audit:
        return cls(check=_check(o.str("check")), status=o.word("status", AuditStatus),
                   message=o.str("message", default=""), layer=o.opt_str("layer"))
