"""What of a structure change comes before the layer where the reference moved first: that layer a model
output only one side has, or new layers that run before it and baseline layers before it that are gone.
The model-change hint decides it (``ahead``) and carries it in its evidence; the next step reads it back,
and both word it here, so a PR that adds a block is named by the block, not by the first layer after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gate.core.layers import is_output
from gate.core.spans import span
from gate.verdict.structure import Structure


@dataclass(frozen=True)
class Ahead:
    new: int = 0  # new layers that run before it (or 1: it is a new model output)
    first_new: str = ""
    gone: int = 0  # baseline layers before it that no longer run (or 1: it is a model output now gone)
    first_gone: str = ""
    output: bool = False  # it is itself a model output only one side has
    outputs: tuple[str, ...] = ()  # else: model outputs only the run has, then those only the baseline has
    outputs_new: int = 0  # of ``outputs``, the run's

    def __bool__(self) -> bool:
        return bool(self.new or self.gone)

    def to_dict(self) -> dict[str, Any]:
        outputs = {"outputs": list(self.outputs), "outputs_new": self.outputs_new} if self.outputs else {}
        return {"new": self.new, "first_new": self.first_new, "gone": self.gone,
                "first_gone": self.first_gone, "output": self.output, **outputs}  # absent where none

    @classmethod
    def from_evidence(cls, evidence: Mapping[str, Any]) -> Ahead:
        """From the model-change hint's ``ahead`` (a report file's: anything else reads as nothing ahead)."""
        o = evidence.get("ahead")
        if not isinstance(o, dict):
            return cls()
        new, gone, first_new, first_gone = (o.get(k) for k in ("new", "gone", "first_new", "first_gone"))
        outputs = tuple(n for n in o.get("outputs") or () if isinstance(n, str)) if isinstance(
            o.get("outputs"), list) else ()
        return cls(_count(new), first_new if isinstance(first_new, str) else "", _count(gone),
                   first_gone if isinstance(first_gone, str) else "", o.get("output") is True, outputs,
                   min(_count(o.get("outputs_new")), len(outputs)))

    def words(self, layer: str, code: Callable[[str], str] = span) -> str:
        """``11 new layers (first: `blocks.2.norm1`) run before `norm```, ``a new model output `(model)[1]```
        (``code``: how a name is written)."""
        if self.output:
            return (f"a new model output {code(layer)}" if self.new else
                    f"a model output is gone: {code(layer)}")
        new = (f"{self.new} new layer{'s' * (self.new != 1)} (first: {code(self.first_new)}) run before "
               f"{code(layer)}") if self.new else ""
        gone = (f"{self.gone} {'' if new else 'layer' + 's' * (self.gone != 1) + ' '}gone (first: "
                f"{code(self.first_gone)}) ran before {'it' if new else code(layer)}") if self.gone else ""
        return ", and ".join(p for p in (new, gone) if p)

    def outputs_words(self, code: Callable[[str], str] = span) -> str:
        """``; a new model output `(model)[1]```, ``; a model output is gone: `(model)```: what ships changed
        beside a move before it ("" where no output is only one side's)."""
        fresh, gone = self.outputs[:self.outputs_new], self.outputs[self.outputs_new:]
        parts = [f"a new model output {', '.join(map(code, fresh))}" if len(fresh) == 1 else
                 f"{len(fresh)} new model outputs ({', '.join(map(code, fresh))})" if fresh else "",
                 f"a model output is gone: {', '.join(map(code, gone))}" if len(gone) == 1 else
                 f"{len(gone)} model outputs are gone ({', '.join(map(code, gone))})" if gone else ""]
        return "".join(f"; {p}" for p in parts if p)


def _count(x: object) -> int:
    return x if type(x) is int and x >= 0 else 0


def ahead(st: Structure | None, order: list[str], baseline_order: list[str], layer: str) -> Ahead:
    """``layer``: where the reference moved first; ``order``: the run's layers, ``baseline_order``: the
    baseline's, each in execution order."""
    if st is None:
        return Ahead()
    if is_output(layer) and layer in st.new:
        return Ahead(1, layer, output=True)
    if is_output(layer) and layer in st.gone:
        return Ahead(gone=1, first_gone=layer, output=True)
    index = {n: i for i, n in enumerate(order)}
    was = st.recorded(layer) or layer
    before = baseline_order.index(was) if was in baseline_order else len(baseline_order)
    new = [n for n in st.new if not is_output(n) and index.get(n, len(order)) < index.get(layer, len(order))]
    removed = set(st.gone)
    gone = [n for n in baseline_order[:before] if n in removed and not is_output(n)]
    fresh = [n for n in st.new if is_output(n)]
    return Ahead(len(new), new[0] if new else "", len(gone), gone[0] if gone else "",
                 outputs=(*fresh, *(n for n in st.gone if is_output(n))), outputs_new=len(fresh))
