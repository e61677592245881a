"""What every hint looks at: the run, the baseline and the verdict being built, indexed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gate.core.jsonsafe import plain
from gate.core.status import Role
from gate.verdict.notes import Hint
from gate.verdict.rows import Row
from gate.verdict.types import ProviderVerdict

if TYPE_CHECKING:
    from gate.config import ModelSpec
    from gate.core.runs import ModelRun, ProviderRun
    from gate.formats.baseline import Baseline
    from gate.verdict.structure import Structure
    from gate.verdict.types import ModelVerdict


def make(kind: str, layer: str, provider: str, message: str, **evidence: Any) -> Hint:
    """A hint with JSON-clean evidence (finite floats or None, plain numbers, lists)."""
    return Hint(kind, layer, provider, message, plain(evidence))


class Context:
    def __init__(self, spec: ModelSpec, run: ModelRun, baseline: Baseline, verdict: ModelVerdict,
                 structure: Structure | None = None) -> None:
        self.spec, self.run, self.baseline, self.verdict = spec, run, baseline, verdict
        self.structure = structure  # the verdict's renames, copies, new and gone layers (None: not judged)
        self.order = [layer.name for layer in run.layers]
        self.index = {name: i for i, name in enumerate(self.order)}
        self.ref_now = {layer.name: layer.fp for layer in run.layers}
        self.ref_base = {x.name: x.fp for x in baseline.layers}
        self.targets: list[ProviderVerdict] = verdict.providers
        self.reference = next((p for p in self.targets if p.role == Role.REFERENCE), None)
        self.ref_dtype = run.reference_dtype

    def runtimes(self) -> list[ProviderVerdict]:
        return [p for p in self.targets if p.role == Role.RUNTIME]

    def rows(self, pv: ProviderVerdict) -> dict[str, Row]:
        return {r.layer: r for r in pv.rows}

    def prun(self, pv: ProviderVerdict) -> ProviderRun | None:
        """The run behind a runtime verdict (same provider, precision and device label)."""
        return next((p for p in self.run.providers
                     if (p.name, p.precision, p.target.label) == (pv.name, pv.precision, pv.label)), None)
