"""Layers whose shape depends on values (docs/verdict.md#data-dependent-shapes): score thresholds, NMS,
top-k and masks keep another number of elements in float32 than in float64. The float64 reference is
judged as any layer is; a runtime row that fails is judged by the layer's rule (``detections``,
``recorded``, ``distribution``), and a real change still fails at the first layer that moved.
"""

from __future__ import annotations

import math

from gate.config import DetectionTolerance, ModelSpec
from gate.config.providers import kind_of
from gate.core.detections import MATCH_IOU, Detections
from gate.core.runs import LayerInfo, ModelRun, ProviderLayer
from gate.core.status import Check, DataDependence, LayerStatus, RowStatus, RunStatus
from gate.fingerprint import Fingerprint
from gate.formats.baseline import Baseline, EntryLayer
from gate.verdict import drift
from gate.verdict.rows import Row
from gate.verdict.structure import Structure


def _leading_differs(pl: ProviderLayer | None, ref: Fingerprint) -> bool:
    """Another size along the first dimension only: another number of items, each of the same shape."""
    if pl is None or pl.status != LayerStatus.OK or pl.fp is None:
        return False
    a, b = tuple(pl.fp.shape), tuple(ref.shape)
    return len(a) == len(b) >= 1 and a[0] != b[0] and a[1:] == b[1:]


def recognize(run: ModelRun, baseline: Baseline | None = None,
              st: Structure | None = None) -> dict[str, DataDependence]:
    """The run's data-dependent layers and how each is known: the watch, then the baseline's record,
    then the runs. Only PyTorch providers count for the runs: they run the model's own code, so a
    size that differs there depends on values; an ONNX graph may differ by a fault of its own."""
    torch_runs = [p for p in run.providers if p.status == RunStatus.OK and kind_of(p.name).torch]
    out: dict[str, DataDependence] = {}
    for layer in run.layers:
        how = layer.data_dependent
        if how is None and baseline is not None:
            recorded = baseline.layer(st.recorded(layer.name) if st else layer.name)
            how = recorded.data_dependent if recorded is not None else None
        if how is None and any(_leading_differs(p.layers.get(layer.name), layer.fp) for p in torch_runs):
            how = DataDependence.RUNS
        if how is not None:
            out[layer.name] = how
    return out


def mark(run: ModelRun, previous: Baseline | None = None) -> None:
    """Record on the run's layers what ``recognize`` knows (``update-baseline`` writes it): once a
    layer was seen to depend on values, a rerun that happens to agree in size does not forget it."""
    found = recognize(run, previous)
    for layer in run.layers:
        layer.data_dependent = found.get(layer.name)


def judged(row: Row, layer: LayerInfo, provider: str, pl: ProviderLayer, spec: ModelSpec, precision: str,
           how: DataDependence, recorded: EntryLayer | None = None) -> Row:
    """A runtime's row of a data-dependent layer: the usual ``row`` while it passes, else its rule's:
    ``detections`` where the runner matched the layer's group, else ``recorded`` where the runtime
    gives what its baseline entry (``recorded``) holds, else ``distribution``."""
    if not row.failed:
        row.data_dependent = how
        return row
    tol = spec.tolerance_for(layer.name, precision)
    if pl.detections is not None:
        new = detections_row(layer, pl.detections, spec.detections, tol.ceiling)
    else:
        new = (recorded_row(layer, provider, pl.fp, recorded, tol.floor)
               or distribution_row(layer, provider, pl.fp, layer.fp, tol.ceiling))
    new.data_dependent, new.exact = how, row.exact
    return new


def _row(layer: LayerInfo, failed: bool, check: Check, value: float, threshold: float, message: str) -> Row:
    return Row(layer=layer.name, type=layer.type, status=RowStatus.FAIL if failed else RowStatus.PASS, check=check,
               value=float(value), threshold=float(threshold), message=message)


def detections_row(layer: LayerInfo, d: Detections, tol: DetectionTolerance, ceiling: float) -> Row:
    """The ``detections`` rule for one member of a matched group (docs/verdict.md)."""
    confident = [i for i, (r, a, _) in enumerate(d.pairs) if max(r, a) >= tol.min_score]
    missing = [s for s in d.unmatched_reference if s >= tol.min_score]
    extra = [s for s in d.unmatched_actual if s >= tol.min_score]
    moved = [d.pairs[i][2] for i in confident if d.pairs[i][2] < tol.iou]
    head = (f"{len(d.pairs)} matched of {d.reference} in the reference and {d.actual} here "
            f"(IoU ≥ {MATCH_IOU:g}{', same label' if d.labels else ''})")
    if not confident and not missing and not extra:
        return _row(layer, False, Check.DETECTIONS, 0, 0, f"{head}; none scores ≥ {tol.min_score:g} on either side: "
                    "nothing confident to compare (the layers before the post-processing are compared as usual)")
    role = d.role(layer.name)
    if role == "scores":
        delta = max((abs(d.pairs[i][0] - d.pairs[i][1]) for i in confident), default=0.0)
        return _row(layer, delta > tol.score, Check.DETECTIONS, delta, tol.score,
                    f"{head}; scores of the {len(confident)} matched with score ≥ {tol.min_score:g} differ by at "
                    f"most {delta:.3g} (limit {tol.score:g})")
    if role == "attribute":
        errors = d.attribute_errors.get(layer.name, ())
        worst = max((errors[i] for i in confident if i < len(errors)), default=0.0)
        return _row(layer, not worst <= ceiling, Check.DETECTIONS, worst, ceiling,
                    f"{head}; of the {len(confident)} matched with score ≥ {tol.min_score:g}, the worst differs by "
                    f"{worst:.3g} (relative L2; ceiling {ceiling:g})")
    bad = len(missing) + len(extra) + len(moved)
    if bad:
        parts = [f"{len(missing)} of the reference's unmatched (highest score {max(missing):.3g})"] if missing else []
        parts += [f"{len(extra)} here unmatched (highest score {max(extra):.3g})"] if extra else []
        parts += [f"{len(moved)} matched but moved (IoU {min(moved):.3g} < {tol.iou:g})"] if moved else []
        return _row(layer, True, Check.DETECTIONS, bad, 0, f"{head}; with score ≥ {tol.min_score:g}: " + ", ".join(parts))
    worst = min((d.pairs[i][2] for i in confident), default=1.0)
    below = len(d.unmatched_reference) + len(d.unmatched_actual)
    return _row(layer, False, Check.DETECTIONS, 0, 0, f"{head}; all {len(confident)} with score ≥ {tol.min_score:g} "
                f"matched (worst IoU {worst:.6g}); {below} below it unmatched")


def _distance(fp: Fingerprint, ref: Fingerprint, extremes: bool) -> float:
    """Largest difference of the quantiles and mean (and min/max with ``extremes``), relative to the
    largest magnitude of ``ref``: order-blind, so it compares sets whatever order they come in. Where
    fills dominate either side (``drift.filled``: a mask's -1e9 beside values near 1), that magnitude is
    the fills', so each order statistic is relative to its own magnitude or the quantiles' typical one."""
    largest = max(abs(ref.min), abs(ref.max)) or 1.0
    pairs = list(zip(fp.quantiles, ref.quantiles, strict=True))
    pairs += [(fp.min, ref.min), (fp.max, ref.max)] if extremes else []
    mean = abs(fp.mean - ref.mean) / largest  # the fills' share sets the mean: their magnitude is its scale
    if not (drift.filled(fp) or drift.filled(ref)):
        return max(mean, *(abs(a - b) / largest for a, b in pairs))
    m = max(drift.typical(fp), drift.typical(ref))
    return max(mean, *(moved for a, b in pairs if (moved := drift.relative_move(a, b, m)) is not None))


def recorded_row(layer: LayerInfo, provider: str, fp: Fingerprint | None, recorded: EntryLayer | None,
                 floor: float) -> Row | None:
    """The ``recorded`` rule: the runtime gives the set its baseline entry recorded (same size, values
    within the floor) while the reference row, judged apart, holds the reference to its baseline: so
    the two still relate as they did. None where it does not apply (no entry value, another size)."""
    base = recorded.fp if recorded is not None and recorded.status == LayerStatus.OK else None
    if fp is None or base is None or tuple(fp.shape) != tuple(base.shape) or not fp.finite or \
            (fp.nan, fp.posinf, fp.neginf) != (base.nan, base.posinf, base.neginf):
        return None
    distance = _distance(fp, base, extremes=True)
    if not distance <= floor:
        return None
    return _row(layer, False, Check.RECORDED, distance, floor,
                f"shape depends on values ({provider} {list(fp.shape)}, reference {list(layer.fp.shape)}): "
                f"{provider} gives what its baseline recorded (within {distance:.3g}, limit {floor:g})")


def _nonfinite(fp: Fingerprint) -> tuple[bool, bool, bool]:
    return fp.nan > 0, fp.posinf > 0, fp.neginf > 0


def distribution_row(layer: LayerInfo, provider: str, fp: Fingerprint | None, ref: Fingerprint, ceiling: float) -> Row:
    """The ``distribution`` rule: the values as an unordered set, whatever their number. Quantiles
    and mean are compared, each relative to the reference's largest magnitude (``_distance``); NaN/Inf
    appear on both sides or on neither."""
    sizes = f"{provider} {list(fp.shape) if fp is not None else '?'}, reference {list(ref.shape)}"
    if fp is None:
        return _row(layer, True, Check.DISTRIBUTION, math.inf, ceiling, f"shape depends on values ({sizes}): no values")
    if _nonfinite(fp) != _nonfinite(ref):
        return _row(layer, True, Check.NONFINITE, fp.nan + fp.posinf + fp.neginf, ref.nan + ref.posinf + ref.neginf,
                    f"shape depends on values ({sizes}): NaN/Inf on one side only ({fp.nan} NaN, {fp.posinf} +Inf, "
                    f"{fp.neginf} -Inf here; {ref.nan}, {ref.posinf}, {ref.neginf} in the reference)")
    if not fp.finite or not ref.finite:
        empty = not fp.finite and not ref.finite
        return _row(layer, not empty, Check.DISTRIBUTION, 0 if empty else math.inf, ceiling,
                    f"shape depends on values ({sizes}): " + ("no finite value on either side" if empty else
                                                              "finite values on one side only"))
    distance = _distance(fp, ref, extremes=False)
    return _row(layer, not distance <= ceiling, Check.DISTRIBUTION, distance, ceiling,
                f"shape depends on values ({sizes}): compared as an unordered set, quantiles and mean within "
                f"{distance:.3g}, relative to their magnitude (limit {ceiling:g})")
