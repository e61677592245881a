"""Where the float64 reference moved by a change of its own (docs/verdict.md#verdict): its first drift,
then each later layer that moved whose own module's code or own tensors changed (the model's own code is
the first's), once per module. Every other layer that moved follows its own module's cause, else the
nearest of these before it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gate.core.layers import ROOT, module_of, renamed_modules
from gate.core.runs import ModelRun
from gate.core.spans import span
from gate.core.status import Check, RowStatus
from gate.formats.baseline import Baseline
from gate.verdict.reexpression import modules_changed, reexpression
from gate.verdict.rows import Regression, Row
from gate.verdict.tensors import sums, tensor_changes


@dataclass(frozen=True)
class Cause:
    layer: str
    tensors: tuple[str, ...] = ()  # its module's own tensors whose values changed
    code: bool = False  # its module's own code changed

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "tensors": list(self.tensors), "code": self.code}

    @classmethod
    def from_evidence(cls, evidence: Mapping[str, Any]) -> tuple[Cause, ...]:
        """The later causes the model-change hint carries (a report file's: anything malformed is none)."""
        found = evidence.get("causes")
        if not isinstance(found, list):
            return ()
        return tuple(cls(c["layer"], tuple(t for t in c.get("tensors") or () if isinstance(t, str)),
                         c.get("code") is True)
                     for c in found if isinstance(c, dict) and isinstance(c.get("layer"), str))

    def words(self, code: Callable[[str], str] = span) -> str:
        """``at `norm`, whose code changed``, ``at `fc2`, whose tensor `fc2.weight` changed``."""
        shown = ", ".join(code(t) for t in self.tensors[:3]) + (", …" if len(self.tensors) > 3 else "")
        tensors = f"tensor{'s' * (len(self.tensors) > 1)} {shown}" if self.tensors else ""
        what = " and ".join(p for p in ("code" if self.code else "", tensors) if p)
        return f"at {code(self.layer)}, whose {what} changed"


SHOWN = 2  # later causes named in a sentence: a change to every weight would name every layer


def later(found: tuple[Cause, ...], code: Callable[[str], str] = span) -> str:
    """``, then by a change of its own at `norm`, whose code changed``: the causes after the first (the
    first ``SHOWN``, then how many more)."""
    if not found:
        return ""
    more = f" and at {len(found) - SHOWN} more layers" if len(found) > SHOWN else ""
    return f", then by a change of its own {' and '.join(c.words(code) for c in found[:SHOWN])}{more}"


def causes(first: Regression | None, rows: list[Row], run: ModelRun, baseline: Baseline,
           order: dict[str, int], renames: dict[str, str]) -> list[Cause] | None:
    """The first drift's cause, then each later one, in execution order; None where there is no drift
    first or a side did not digest its modules or tensors (each row keeps its mark). A module the verdict
    renamed (``renames``: its layers') is judged by its tensors against its baseline namesake's: its code
    digest names its tensors and covers every call of a shared module, so it differs whatever the code."""
    code = modules_changed(run, baseline)
    renamed = {m for m, was in renamed_modules(renames).items() if m != was}
    moves = reexpression(run, baseline)
    found = tensor_changes(baseline.meta.tensor_digests, run.meta.tensor_digests, renames, moves.changed,
                           sums(run, baseline))
    if first is None or first.check != Check.REFERENCE_DRIFT or code is None or found is None:
        return None
    changed = sorted({*found.values, *found.unmatched} - moves.moved)
    at = order.get(first.layer, len(order))

    def of(layer: str) -> Cause:
        module = module_of(layer)
        return Cause(layer, tuple(n for n in changed if n.rpartition(".")[0] == module),
                     module in code and module not in renamed)

    out = [of(first.layer)]
    named = {ROOT, *own(out)}  # a module's change is one cause however many of its calls and outputs it moves
    for r in rows:
        if (r.status == RowStatus.FAIL and r.check == Check.REFERENCE_DRIFT and order.get(r.layer, -1) > at
                and module_of(r.layer) not in named and ((c := of(r.layer)).tensors or c.code)):
            out.append(c)
            named.add(module_of(r.layer))
    return out


def own(found: list[Cause]) -> dict[str, str]:
    """The modules with a change of their own among ``found``: each module's cause layer. Its other
    calls and output elements move with that layer, whatever changed between them."""
    out: dict[str, str] = {}
    for c in found:
        if c.tensors or c.code:
            out.setdefault(module_of(c.layer), c.layer)
    return out
