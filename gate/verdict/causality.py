"""A first regression never comes before what changed.

Where only weights changed, the float64 reference cannot move before the first call of a module that
reads one of them (as the probe's trace saw it: a tied weight is read outside its owner); an earlier
failing row contradicts the gate's own comparison and is reported as such, never as the first
regression. Runtimes are not bound by it: their drivers and builds are outside the key. """

from __future__ import annotations

from dataclasses import dataclass

from gate.core.layers import ROOT, module_of
from gate.core.runs import ModelRun
from gate.core.spans import span
from gate.core.status import KeyPart
from gate.formats.baseline import Baseline
from gate.verdict.moves import enclosing
from gate.verdict.rows import Row
from gate.verdict.structure import Structure
from gate.verdict.tensors import sums, tensor_changes

ONLY = KeyPart.WEIGHTS.value  # the content-key part that may differ for the rule to hold


@dataclass(frozen=True)
class Cause:
    """The only change since the baseline: tensors, the modules whose calls first use them, and where
    in execution order the first of those calls ends."""

    tensors: tuple[str, ...]
    modules: tuple[str, ...]
    first: int  # index of the first layer of the earliest such call

    def allows(self, layer: str, index: int) -> bool:
        """Whether a layer may move: inside a module that uses a changed tensor, or not before its call."""
        module = module_of(layer)
        inside = any(m == ROOT or module == m or module.startswith(m + ".") for m in self.modules)
        return inside or index >= self.first

    def words(self) -> str:
        shown = ", ".join(span(t) for t in self.tensors[:3]) + (", …" if len(self.tensors) > 3 else "")
        return f"the only change is {len(self.tensors)} tensor{'s' * (len(self.tensors) != 1)} ({shown}), first used in {span(self.modules[0])}"


def cause(run: ModelRun, baseline: Baseline, st: Structure | None) -> Cause | None:
    """The only change, where the content keys and tensor digests of both sides establish it."""
    now, before = run.meta.content_key, baseline.meta.content_key
    if not now or not before:
        return None
    parts, recorded = now.get("parts") or {}, before.get("parts") or {}
    if not parts or {p for p in {*parts, *recorded} if parts.get(p) != recorded.get(p)} != {ONLY}:
        return None
    changes = tensor_changes(baseline.meta.tensor_digests, run.meta.tensor_digests, st.renames if st else {},
                             sums=sums(run, baseline))
    if changes is None or not changes.values or changes.unmatched:
        return None
    starts: dict[str, int] = {}
    for i, layer in enumerate(run.layers):
        starts.setdefault(module_of(layer.name), i)
    users: dict[str, int] = {}
    for tensor in changes.values:  # where the probe saw it read first (a tied weight), else its owner
        owner = run.first_use.get(tensor) or tensor.rpartition(".")[0] or ROOT
        module = next((m for m in (owner, *enclosing(owner)) if m in starts), None)
        if module is None:
            return None  # a tensor no call of this run can be tied to: nothing to hold the run to
        users.setdefault(module, starts[module])
    ordered = sorted(users, key=lambda m: users[m])
    return Cause(tuple(changes.values), tuple(ordered), users[ordered[0]])


def contradicted(rows: list[Row], order: dict[str, int], found: Cause | None) -> list[str]:
    """The failing reference rows that come before the only change could reach them."""
    return [] if found is None else [r.layer for r in rows if r.failed and r.layer in order
                                     and not found.allows(r.layer, order[r.layer])]
