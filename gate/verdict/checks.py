"""Per-layer checks (docs/verdict.md#verdict): the float64 reference against its baseline (a move is a
change of the model), each runtime's error against today's reference against its baseline error (growth
factor plus floor), so a model change moves reference and runtimes together and leaves runtime errors alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gate.config import ModelSpec
from gate.core.layers import ROOT, is_output, module_of
from gate.core.runs import LayerInfo, ModelRun, ProviderLayer, ProviderRun
from gate.core.spans import span
from gate.core.status import DATA_DEPENDENT_RULES, Check, DataDependence, LayerStatus, RowStatus
from gate.core.target import ROUNDING, coarsest
from gate.fingerprint import Fingerprint, difference
from gate.formats.baseline import Baseline, BaselineLayer, Entry, EntryLayer
from gate.verdict import data_dependent, moves, reexpression
from gate.verdict.drift import drift
from gate.verdict.rows import Row
from gate.verdict.structure import Limit, Move, Structure, identifies, structure
from gate.verdict.tensors import sums, tensor_changes

CODE_SEAL = 1e-12  # what a refactor of code moves a float64 output by: its roundings, ~1e-15
NOISE_MARGIN = 4.0  # thresholds stay at least this many times the calibrated noise away
# A reference computed (partly) below float64 moves with that precision's rounding across machines
# and thread counts: its limit is at least this, never the 1e-9 only float64 can meet.
REFERENCE_FLOOR = ROUNDING
# difference() is NaN where a fingerprint's float64 sums overflowed: what cannot be measured never passes
UNCOMPUTABLE = "cannot be computed (a float64 sum of the fingerprints overflowed): never within a limit"


def _row(layer: LayerInfo, status: RowStatus, check: Check | None = None, value: float | None = None,
         threshold: float | None = None, baseline: float | None = None, message: str | None = None,
         absolute: bool = False) -> Row:
    return Row(layer=layer.name, type=layer.type, status=status, check=check, value=_num(value),
               threshold=_num(threshold), baseline=_num(baseline), message=message, absolute=absolute)


def _num(v: float | None) -> float | None:
    return None if v is None else float(v)


def _nonfinite(fp: Fingerprint) -> tuple[int, int, int]:
    return (fp.nan, fp.posinf, fp.neginf)


def _describe_nonfinite(counts: tuple[int, int, int]) -> str:
    parts = [f"{n} {label}" for n, label in zip(counts, ("NaN", "+Inf", "-Inf"), strict=True) if n]
    return ", ".join(parts) or "none"


def degenerate(fp: Fingerprint, outputs: list[Fingerprint]) -> str | None:
    """An output that carries no information: none of its elements finite, or every element zero where
    every output's is (class indices or a mask all zero beside logits are values, not a dead model), or
    empty where every output is (a zero-size input: nothing is compared; one empty detection list beside
    others is a value)."""
    if fp.count == 0:
        return "every output is empty (a zero-size input?)" if all(o.count == 0 for o in outputs) else None
    if fp.nan + fp.posinf + fp.neginf == fp.count:
        return "every element is NaN/Inf"
    if all(o.zero == o.count for o in outputs):
        return "every element is zero" if len(outputs) == 1 else "every element of every output is zero"
    return None


def outputs_of(run: ModelRun) -> list[Fingerprint]:
    return [x.fp for x in run.layers if is_output(x.name)]


def reference_limit(tolerance: float, precision: str, noise: float | None) -> float:
    """The reference may move by its tolerance (at least its precision's floor when it computed
    below float64), never by less than 4x its calibrated noise."""
    return max(tolerance, REFERENCE_FLOOR.get(precision, 0.0), NOISE_MARGIN * (noise or 0.0))


def limits(run: ModelRun, baseline: Baseline, spec: ModelSpec, cap: float = math.inf) -> Limit:
    """How far the reference may move at a layer: its tolerance (at most ``cap``), at the precision of the
    less precise side of the comparison (a comparison is as precise as that), never under its calibrated
    noise. Integer and bool values carry no rounding: only the precision's own floor, none in float64."""
    dtypes = coarsest(run.reference_dtype, baseline.reference_dtype)

    def limit(layer: LayerInfo, recorded: BaselineLayer) -> float:
        precision = coarsest(dtypes, layer.reached, recorded.reached)
        if layer.integer:
            return REFERENCE_FLOOR.get(precision, 0.0)
        return reference_limit(min(spec.tolerance_for(layer.name).reference, cap), precision, recorded.noise)
    return limit


def layout(run: ModelRun, baseline: Baseline, spec: ModelSpec) -> Structure:
    """What changed in the model's structure: renames and copies matched by numbers, new and gone layers,
    and the layers that moved inside a module whose output holds."""
    limit = limits(run, baseline, spec)
    st = structure(run, baseline, limit)
    # Where a re-expression computed new weights, a module's output also holds within their float32 rounding
    # (float32's own error there: a provider's floor is no licence for the reference). Else: the reference's.
    # Where only code changed, the outputs of the call around a move hold to what code alone moves float64 by:
    # a layer scale (1e-6) shrinks a fault inside to far below the reference's tolerance, never to that.
    budget = moves.rounding(baseline)
    if reexpression.rounds(run, baseline):
        seal = lambda layer, recorded: max(limit(layer, recorded), budget(recorded.name))  # noqa: E731
        return replace(st, moved=moves.inside(run, baseline, st, limit, seal))
    return replace(st, moved=moves.inside(run, baseline, st, limit, limit, limits(run, baseline, spec, CODE_SEAL)))


def reference_rows(run: ModelRun, baseline: Baseline, spec: ModelSpec, st: Structure | None = None,
                   dependent: Mapping[str, DataDependence] | None = None) -> list[Row]:
    """One row per layer that ran (a renamed one judged as the baseline's layer), then one per layer
    that is gone. A new or gone layer is reported, not failed, unless it is a model output. A
    data-dependent layer (``dependent``) is judged as any other: the float64 reference reproduces it."""
    st = st or layout(run, baseline, spec)
    limit = limits(run, baseline, spec)
    altered = reexpression.reexpression(run, baseline).changed
    rows = [_reference_layer(run, layer, baseline, st, limit, (dependent or {}).get(layer.name), altered)
            for layer in run.layers]
    ran = {x.name for x in run.layers}
    for n in st.gone:
        x = baseline.layer(n)
        assert x is not None  # ``gone`` names only the baseline's layers
        output = is_output(x.name)
        rows.append(Row(x.name, x.type, RowStatus.FAIL if output else RowStatus.MISSING, Check.STRUCTURE,
                        message="a model output in the baseline is gone: what ships changed" if output else
                        "the baseline's layer of this name did not run: the name now belongs to another module"
                        if x.name in ran else
                        "layer is in the baseline but did not run (the model's structure changed)"))
    return rows


def _reference_layer(run: ModelRun, layer: LayerInfo, baseline: Baseline, st: Structure, limit: Limit,
                     how: DataDependence | None, altered: frozenset[str]) -> Row:
    own = baseline.layer(st.own(layer.name)) if layer.name in st.moved else None
    if own is not None:  # a layer moved inside its module: its own baseline layer holds its old values
        return _moved_row(layer, own.fp, limit(layer, own), st.moved[layer.name])
    recorded = baseline.layer(st.recorded(layer.name))
    if recorded is None:
        return _row(layer, RowStatus.FAIL, Check.STRUCTURE, message="a model output the baseline does not "
                    "have: what ships changed") if is_output(layer.name) else \
            _row(layer, RowStatus.NEW, Check.STRUCTURE, message="layer is not in the baseline (the "
                 "model's structure changed): not compared")
    row = _reference_row(run, layer, recorded.fp, limit(layer, recorded))
    tensors = _changed_tensors(run, baseline, st, layer.name, altered) if row.failed else []
    if row.check in (Check.REFERENCE_DRIFT, Check.SHAPE) and tensors:
        more = f" and {len(tensors) - 3} more" if len(tensors) > 3 else ""
        shown = ", ".join(span(n) for n in tensors[:3]) + more
        why = (": re-expressed (split, merged or renamed) into as many values as before, not the same ones"
               if altered.intersection(tensors) else "")
        row.message = f"{row.message}; {'its tensor' if len(tensors) == 1 else 'its tensors'} {shown} changed{why}"
    if row.message is None and recorded.name != layer.name:
        row.message = f"{'renamed from' if layer.name in st.renames else 'same values as'} {recorded.name}"
    row.data_dependent = how
    return row


def _changed_tensors(run: ModelRun, baseline: Baseline, st: Structure, layer: str,
                     altered: frozenset[str]) -> list[str]:
    """The tensors of ``layer``'s module (and those inside it) whose values changed under their names, then
    those only the baseline has, then those only the run has: a tensor of a module matched under another
    name is compared under the name it had, and is no change where its values are the same."""
    before, now = baseline.meta.tensor_digests or {}, run.meta.tensor_digests or {}
    changes = tensor_changes(before, now, st.renames, altered, sums(run, baseline))
    module = module_of(layer)
    prefix = "" if module == ROOT else module + "."
    listed = dict.fromkeys(changes.values + changes.unmatched if changes else [])
    names = [n for n in listed if n.startswith(prefix)]
    return sorted(names, key=lambda n: (n not in before, n in before and n not in now))


def _reference_row(run: ModelRun, layer: LayerInfo, base: Fingerprint, limit: float) -> Row:
    now = layer.fp
    dead = degenerate(now, outputs_of(run)) if is_output(layer.name) else None
    if dead:
        return _row(layer, RowStatus.FAIL, Check.DEGENERATE, message=f"the model's output is degenerate: {dead}; a gate never "
                    "passes such a model, baseline or not")
    if tuple(now.shape) != tuple(base.shape):
        return _row(layer, RowStatus.FAIL, Check.SHAPE, message=f"reference shape {list(now.shape)}, baseline {list(base.shape)}")
    if _nonfinite(now) != _nonfinite(base):
        n, b = sum(_nonfinite(now)), sum(_nonfinite(base))
        return _row(layer, RowStatus.FAIL, Check.NONFINITE, n, b, b, message=f"reference has {_describe_nonfinite(_nonfinite(now))}; "
                    f"baseline {_describe_nonfinite(_nonfinite(base))}")
    change = drift(now, base)
    if change.value != change.value:
        return _row(layer, RowStatus.FAIL, Check.REFERENCE_DRIFT, change.value, limit, 0.0,
                    message=f"the {run.reference_dtype} reference's distance to its baseline {UNCOMPUTABLE}")
    if change.value > limit:
        bound = "integers, which no rounding moves" if layer.integer and not limit else f"limit {limit:.3g}"
        return _row(layer, RowStatus.FAIL, Check.REFERENCE_DRIFT, change.value, limit, 0.0,
                    message=f"the {run.reference_dtype} reference moved by {change.value:.3g} ({change.words()}; "
                    f"{bound}): the model's code or weights changed", absolute=change.absolute)
    return _row(layer, RowStatus.PASS, Check.REFERENCE_DRIFT, change.value, limit, 0.0, absolute=change.absolute)


def _moved_row(layer: LayerInfo, base: Fingerprint, limit: float, move: Move) -> Row:
    """A layer that moved inside a module call whose output holds: reported, not failed."""
    words = move.words(layer.name)
    where = f"{words}: its values went on, as a refactor moves them"
    if move.rounded:
        where = f"{words}: weights re-expressed before it (a fold, a merge, a split) round in float32"
    elif move.within:
        where = f"moved inside {span(move.within)}, whose output holds (a refactor inside it): {words}"
    if tuple(layer.fp.shape) != tuple(base.shape):
        return _row(layer, RowStatus.MOVED, Check.SHAPE, message=f"shape {list(base.shape)} -> {list(layer.fp.shape)}, {where}")
    change = drift(layer.fp, base)
    return _row(layer, RowStatus.MOVED, Check.REFERENCE_DRIFT, change.value, limit, 0.0, message=where,
                absolute=change.absolute)


def runtime_rows(run: ModelRun, prun: ProviderRun, entry: Entry | None, spec: ModelSpec,
                 st: Structure | None = None, dependent: Mapping[str, DataDependence] | None = None) -> list[Row]:
    """Rows of one runtime; ``entry`` is the baseline entry that judges it (None: no baseline); a
    renamed layer is judged by what the entry recorded under its old name. A data-dependent layer
    (``dependent``) whose usual row fails is judged by its own rule (``data_dependent``). A layer the
    entry has no row of (folded then, an Identity that ran alone now) that holds the very values of an
    earlier layer is judged by that layer's row: its error is the same runtime's on the same values. A model
    output with no value fails: what ships is not what the reference computes, or cannot be compared."""
    rows, held = [], _holders(run)
    for layer in run.layers:
        pl = prun.layers.get(layer.name)
        if pl is None:
            rows.append(_row(layer, RowStatus.ABSENT, message="not captured on this provider"))
        elif pl.status in (LayerStatus.FOLDED, LayerStatus.ABSENT) and is_output(layer.name):
            said = f"the shipped graph does not return {span(layer.name)} ({pl.reason})"
            rows.append(_row(layer, RowStatus.FAIL, Check.STRUCTURE,
                             message=f"{said}: what ships changed, or cannot be compared"))
        elif pl.status in (LayerStatus.FOLDED, LayerStatus.ABSENT):
            rows.append(_row(layer, RowStatus(pl.status), message=pl.reason))
        else:
            recorded = entry.layers.get(st.recorded(layer.name) if st else layer.name) if entry is not None else None
            if (recorded is None or recorded.err is None) and entry is not None and layer.name in held:
                holder = held[layer.name]
                recorded = entry.layers.get(st.recorded(holder) if st else holder) or recorded
            row = _runtime_row(layer, prun, pl, recorded, entry, spec)
            how = (dependent or {}).get(layer.name)
            if how is not None:
                row = data_dependent.judged(row, layer, prun.name, pl, spec, prun.precision, how, recorded)
            # allclose on the full tensors says nothing of a set whose members differ at its margins
            rows.append(_allclose(row, pl.exact, None if row.check in DATA_DEPENDENT_RULES else spec.output_tolerance))
    return rows


def _holders(run: ModelRun) -> dict[str, str]:
    """Each layer whose reference values are an earlier layer's, in any layout (an Identity, a Dropout in
    eval, after a reshape): that earlier layer. The same counts, extremes and order statistics, and sums of
    positive terms equal to 10 digits (their order of addition moves the last bits)."""
    first: dict[tuple[Any, ...], str] = {}
    out = {}
    for layer in run.layers:
        fp = layer.fp
        if not fp.count or not identifies(fp):
            continue
        key = (fp.dtype, fp.count, fp.nan, fp.posinf, fp.neginf, fp.zero, fp.min, fp.max, tuple(fp.quantiles),
               f"{fp.sumsq:.10g}", f"{fp.sumabs:.10g}")
        if key in first:
            out[layer.name] = first[key]
        else:
            first[key] = layer.name
    return out


def _allclose(row: Row, exact: dict[str, Any] | None, tolerance: tuple[float, float] | None) -> Row:
    """An output row carries its exact metrics; with ``output-tolerance`` set, allclose on the full
    tensors is a gate of its own (as in the whole-output recipe); without it, the metrics only inform."""
    row.exact = {**exact, "gated": tolerance is not None} if exact is not None else None
    if exact is None or tolerance is None or exact["allclose"] or row.failed:
        return row
    rtol, atol = tolerance
    bound = atol + rtol * abs(exact["expected"]) if exact["expected"] is not None else atol
    where = ", ".join(map(str, exact["worst_index"]))
    # a row of its own: of the row it replaces it keeps the layer, the baseline and the exact metrics
    return replace(row, status=RowStatus.FAIL, check=Check.ALLCLOSE, value=_num(exact["max_abs"]),
                   threshold=_num(bound), data_dependent=None, absolute=False,
                   message=f"allclose(rtol={rtol:g}, atol={atol:g}) fails on {exact['mismatched']:,} of "
                   f"{exact['count']:,} elements; worst at [{where}]: expected {exact['expected']!r}, got "
                   f"{exact['actual']!r} (max-abs {exact['max_abs']:.3g}, max-rel {exact['max_rel']:.3g})")


def _runtime_row(layer: LayerInfo, prun: ProviderRun, pl: ProviderLayer, recorded: EntryLayer | None,
                 entry: Entry | None, spec: ModelSpec) -> Row:
    """``recorded``: the entry's row for this layer (None: it has none); ``entry``: the entry that judges
    this runtime, at its precision's tolerances (None: none does)."""
    tol = spec.tolerance_for(layer.name, entry.target.precision if entry is not None else prun.precision)
    fp, ref = pl.fp, layer.fp
    assert fp is not None  # a layer the runtime ran (not folded, not absent) carries its fingerprint
    if tuple(fp.shape) != tuple(ref.shape):
        return _row(layer, RowStatus.FAIL, Check.SHAPE, message=f"{prun.name} shape {list(fp.shape)}, reference {list(ref.shape)}")
    was = recorded.fp.dtype if recorded is not None and recorded.fp is not None else fp.dtype
    if is_output(layer.name) and was != fp.dtype:
        return _row(layer, RowStatus.FAIL, Check.DTYPE, message=f"{prun.name} returns {fp.dtype}, its "
                    f"baseline {was}: what ships changed precision, which no tolerance judges")
    if _nonfinite(fp) != _nonfinite(ref):
        return _row(layer, RowStatus.FAIL, Check.NONFINITE, sum(_nonfinite(fp)), sum(_nonfinite(ref)),
                    message=f"{prun.name} has {_describe_nonfinite(_nonfinite(fp))}; reference "
                    f"{_describe_nonfinite(_nonfinite(ref))}")
    # the same measure the runner took: relative, or the RMS of the difference where the reference is all zeros
    absolute = ref.l2 == 0.0
    err = pl.err if pl.err is not None else difference(fp, ref).value
    base = recorded.err if recorded is not None else None
    threshold = (math.inf if recorded is None or base is None or math.isnan(base)
                 else growth_limit(base, tol.growth, tol.floor, recorded.noise))
    known = threshold < math.inf
    if err != err:
        return _row(layer, RowStatus.FAIL, Check.ERROR_GROWTH, err, threshold if known else tol.floor, base,
                    message=f"{prun.name}'s error against the reference {UNCOMPUTABLE}", absolute=absolute)
    if err > threshold:  # checked first: a ceiling row with a baseline is an error within its budget
        return _row(layer, RowStatus.FAIL, Check.ERROR_GROWTH, err, threshold, base,
                    message=f"error against the reference {err:.3g} (baseline {base:.3g}, limit {threshold:.3g} = "
                    f"{tol.growth:g}x + {tol.floor:.0e})", absolute=absolute)
    if err > tol.ceiling:
        held = f"; its baseline was {base:.3g}: the ceiling is under what this runtime gives" if known else ""
        return _row(layer, RowStatus.FAIL, Check.CEILING, err, tol.ceiling, base, absolute=absolute,
                    message=f"error {err:.3g} against the reference{' (RMS: the reference is all zeros)' * absolute} "
                    f"is over the ceiling {tol.ceiling:.3g}{held}")
    if not known:
        if entry is None:  # no baseline for this target at all: its provider verdict says so
            return _row(layer, RowStatus.PASS, Check.ERROR_GROWTH, err, None, None, absolute=absolute)
        if err > tol.floor:
            # Not observable in the baseline (folded, absent): with nothing to grow from, the
            # floor is the limit, so a graph change that un-fuses a layer is still checked.
            return _row(layer, RowStatus.FAIL, Check.ERROR_GROWTH, err, tol.floor, None,
                        message=f"no baseline value (the layer was not observable then); error {err:.3g} against "
                        f"the reference is over the floor {tol.floor:.0e}", absolute=absolute)
        return _row(layer, RowStatus.NEW, Check.ERROR_GROWTH, err, tol.floor, None,
                    message="no baseline value for this layer; within the floor", absolute=absolute)
    return _row(layer, RowStatus.PASS, Check.ERROR_GROWTH, err, threshold, base, absolute=absolute)


def growth_limit(base: float, growth: float, floor: float, noise: float | None) -> float:
    """A runtime's error may grow to growth x its baseline + floor, and never less than its
    baseline + 4x the calibrated noise of that error."""
    return max(growth * base + floor, base + NOISE_MARGIN * (noise or 0.0))


def first_failure(rows: list[Row], order: dict[str, int]) -> Row | None:
    """The failing row earliest in execution order (ties: the first row)."""
    failing = [r for r in rows if r.failed]
    return min(failing, key=lambda r: order.get(r.layer, len(order))) if failing else None
