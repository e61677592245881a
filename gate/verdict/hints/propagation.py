"""``introduced-vs-inherited``: for each target's first regressed layer, was the error
introduced there (every earlier layer clean) or inherited from the first earlier layer that
had already diverged, below its threshold? The evidence carries the per-layer series. The
reference's drift introduced where it first failed is ``model-change``'s layer: said there, once."""

from __future__ import annotations

import math

from gate.core.spans import span
from gate.core.status import DATA_DEPENDENT_RULES, Check, Role, RowStatus
from gate.verdict.hints.context import Context, make
from gate.verdict.notes import Hint
from gate.verdict.rows import Regression
from gate.verdict.types import ProviderVerdict

# Reference noise: float64 reruns on one machine are bit-identical, across CPUs they differ by
# ~1e-16; a float32 reference (a model that cannot run in float64) rounds at ~1e-7. Anything
# above this diverged.
REFERENCE_NOISE = 1e-12
FLOAT32_REFERENCE_NOISE = 1e-6
# A runtime layer "diverged" when err > RUNTIME_DIVERGE * baseline err + RUNTIME_FLOOR_SHARE * floor.
RUNTIME_DIVERGE, RUNTIME_FLOOR_SHARE = 1.5, 0.1
SERIES_LIMIT = 2000


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def _series(ctx: Context, pv: ProviderVerdict) -> list[tuple[str, float | None, float | None]]:
    """(layer, value, baseline) in execution order; a failed nonfinite/shape check, or a failed rule of a
    data-dependent layer (whose value is no error against the reference), is +inf; a layer that moved
    inside a module whose output holds (a refactor) has none."""
    rows = ctx.rows(pv)
    out = []
    for name in ctx.order:
        row = rows.get(name)
        value = None if row is None or row.status == RowStatus.MOVED else row.value if row.check not in DATA_DEPENDENT_RULES else None
        if row is not None and row.check in (Check.NONFINITE, Check.SHAPE, Check.DTYPE, *DATA_DEPENDENT_RULES) \
                and row.status == RowStatus.FAIL:
            value = math.inf
        out.append((name, value, None if row is None else row.baseline))
    return out


def _reference_noise(ctx: Context) -> float:
    return REFERENCE_NOISE if ctx.ref_dtype == "float64" else FLOAT32_REFERENCE_NOISE


def _diverged(ctx: Context, pv: ProviderVerdict, name: str, value: float | None, base: float | None) -> bool:
    if value is None:
        return False
    if not math.isfinite(value):
        return True
    if pv.role == Role.REFERENCE:
        return value > _reference_noise(ctx)
    floor = ctx.spec.tolerance_for(name, pv.precision).floor if ctx.spec is not None else 1e-6
    if base is None or math.isnan(base):
        return value > floor  # no baseline value (e.g. the layer was folded then): only the floor tells
    return value > RUNTIME_DIVERGE * base + RUNTIME_FLOOR_SHARE * floor


def hints(ctx: Context) -> list[Hint]:
    return [h for pv in ctx.targets if (fr := pv.first_regression) is not None and fr.layer in ctx.index
            and not pv.limits_only and not pv.audit_only and (h := _hint(ctx, pv, fr)) is not None]


def _hint(ctx: Context, pv: ProviderVerdict, fr: Regression) -> Hint | None:
    series = _series(ctx, pv)
    k = ctx.index[fr.layer]
    origin = next((i for i in range(k + 1) if _diverged(ctx, pv, *series[i])), k)
    is_ref = pv.role == Role.REFERENCE
    if is_ref and origin == k:
        return None
    before = [v for _, v, _ in series[:k] if v is not None and math.isfinite(v)]
    at = series[k][1]
    # Growth over noise-level values (another CPU's last bits) means nothing: not reported.
    least = _reference_noise(ctx) if is_ref else 0.0
    growth = at / max(before) if at is not None and before and max(before) > least else None
    final = next(((n, v) for n, v, _ in reversed(series) if v is not None), (None, None))
    verdict = "introduced" if origin == k else "inherited"
    what = "drift against the baseline reference" if is_ref else "error against the reference"
    if verdict == "introduced":
        msg = f"{pv.name} ({pv.precision}): the {what} was introduced at {span(fr.layer)}: every earlier layer is clean"
    else:
        under = ("below its threshold" if series[origin][2] is not None or is_ref
                 else "not gated there: no baseline value for that layer")
        msg = (f"{pv.name} ({pv.precision}): {span(fr.layer)} is the first layer over its threshold, but the {what} was "
               f"inherited: it first diverged at {ctx.order[origin]} ({_fmt(series[origin][1])}, {under})")
    if final[0] is not None and final[0] != fr.layer:
        row, value = ctx.rows(pv).get(final[0]), final[1]
        said = f"is {_fmt(value)}"
        if row is not None and value is not None and not math.isfinite(value):
            said = f"fails `{row.check}`"  # inf stands for a failed check that measures no error (_series)
        msg += f"; at the output ({final[0]}) it {said}"
    return make(
        "introduced-vs-inherited", fr.layer, pv.name, msg,
        verdict=verdict, origin=ctx.order[origin], first_regressed=fr.layer,
        metric="reference-drift" if is_ref else "error-vs-reference",
        noise=_reference_noise(ctx) if is_ref else f"{RUNTIME_DIVERGE}x baseline + {RUNTIME_FLOOR_SHARE}x floor",
        value_at_layer=at, max_before=max(before) if before else 0.0, growth_at_layer=growth,
        output_layer=final[0], output_value=final[1],
        series=[[n, v] for n, v, _ in series[:SERIES_LIMIT]],
        baseline_series=None if is_ref else [[n, b] for n, _, b in series[:SERIES_LIMIT]])
