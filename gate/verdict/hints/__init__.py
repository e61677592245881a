"""Root-cause hints: what the fingerprints say about *why* a layer regressed
(docs/verdict.md#root-cause-hints). One module per kind: ``change`` (model-change, runtime-change),
``numerics``, ``layout``, ``precision``, ``nonfinite``, ``propagation`` (introduced-vs-inherited),
``graph`` (export-graph-change); ``context`` and ``weights`` are what they share. A hint never changes
the verdict, and building them never raises: a failure becomes one ``hints-unavailable`` hint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gate.verdict.hints import change, graph, layout, nonfinite, precision, propagation
from gate.verdict.hints.context import Context, make
from gate.verdict.notes import Hint

if TYPE_CHECKING:
    from gate.config import ModelSpec
    from gate.core.runs import ModelRun
    from gate.formats.baseline import Baseline
    from gate.verdict.structure import Structure
    from gate.verdict.types import ModelVerdict

__all__ = ["Context", "model_hints"]


def model_hints(spec: ModelSpec, run: ModelRun, baseline: Baseline | None, verdict: ModelVerdict,
                structure: Structure | None = None) -> list[Hint]:
    """All hints for one model (``verdict`` is the ModelVerdict being built, ``structure`` what the verdict
    matched by numbers: a hint attributes nothing to a rename it compared as its baseline layer)."""
    try:
        if baseline is None or run.error or not run.layers:
            return nonfinite.hints(run, None) if run.layers else []
        ctx = Context(spec, run, baseline, verdict, structure)
        return [*change.hints(ctx), *layout.hints(ctx), *precision.hints(ctx), *nonfinite.hints(run, baseline),
                *propagation.hints(ctx), *graph.hints(ctx)]
    except Exception as exc:  # noqa: BLE001 - explanations must never break the verdict
        return [make("hints-unavailable", "(model)", "",
                     f"root-cause hints could not be computed: {type(exc).__name__}: {exc}")]
