"""Root-cause hints: what the fingerprints say about *why* a layer regressed.

The checks decide pass/fail; hints only explain. Each is computed from what the run and the
baseline already hold (fingerprints, errors, digests, op types, per-target layer status), one
module per kind:

``model-change``            (change.py) the float64 reference moved: the model changed; the
                            weights digest tells weights from code. Or the model's own casts to a
                            lower precision changed (promoted in the reference, run by runtimes).
``runtime-change``          (change.py) a runtime's error grew while the reference did not
                            move at or before that layer; and (numerics.py) a torch provider's
                            TF32/cuDNN/matmul-precision settings differ from its baseline's.
``layout``                  (layout.py) same distribution, different positions: a transpose,
                            permutation, layout or indexing bug.
``precision-loss``          (precision.py) the error is what a float16/bfloat16 round trip of
                            that tensor gives.
``nonfinite-origin``        (nonfinite.py) per target, the first layer holding NaN/Inf.
``introduced-vs-inherited`` (propagation.py) was the error introduced at the first regressed
                            layer or inherited from an earlier one? With the series to chart.
``export-graph-change``     (graph.py) ONNX op types added/removed; layers that became
                            folded/absent or came back.

A hint never changes the verdict, and building them never raises: an unexpected failure
becomes one ``hints-unavailable`` hint.
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
