"""Root-cause hints: what the fingerprints say about *why* a layer regressed.

The checks (:mod:`gate.compare.checks`) decide pass/fail; this module only explains. Every
hint is computed from data the run and the baseline already hold (fingerprints, errors,
digests, op types, per-provider layer status) and has the form::

    {"kind": str, "layer": str, "provider": str, "message": str, "evidence": {...}}

Kinds:

``model-change``            the float64 reference moved: the model changed. The evidence says
                            whether the weights digest differs from the baseline's (weights) or
                            not (code: forward, module types, hyperparameters such as eps).
``runtime-change``          a runtime's error against today's reference grew while the
                            reference did not move at or before that layer.
``layout``                  same distribution, different positions: counts, min/max, moments
                            and quantiles equal within a tight relative tolerance, but the
                            (position-sensitive) sketch distance is large: a transpose, a
                            permutation, a layout or indexing bug.
``precision-loss``          the error at the first regressed layer is what a float16 or
                            bfloat16 round trip of that tensor gives (within a factor of 3).
                            The expected cast error is computed from the reference
                            fingerprint: values are drawn from its quantile function
                            (min, 9 quantiles, max) and rounded.
``nonfinite-origin``        per provider (and the reference), the first layer in execution
                            order holding NaN/Inf.
``introduced-vs-inherited`` for a provider's first regressed layer: was the error introduced
                            there (every earlier layer clean) or inherited (an earlier layer
                            had already diverged, below its threshold)? The evidence carries
                            the per-layer series in execution order, ready to chart.
``export-graph-change``     ONNX op types added/removed and layers that became folded/absent
                            (or came back) compared with the baseline.

A hint never changes the verdict, and building them never raises: an unexpected failure
becomes one ``hints-unavailable`` hint.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gate.fingerprint import QUANTILES, Fingerprint, relative_error

# Relative tolerance for "same distribution" (quantiles, moments) when both sides are float64
# (a permutation only reorders the float64 accumulation: ~1e-15) and when one side is a
# float32/float16 runtime (its own rounding: ~1e-7 .. 1e-3).
LAYOUT_RTOL = {"float64": 1e-9, "float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}
# The sketch distance, divided by the tensor's spread (std * sqrt(n)), above which positions
# are considered different (a random permutation of an i.i.d. tensor gives ~sqrt(2)).
LAYOUT_MIN_MOVE = 0.05
# Float64 reference noise: clean reruns are bit-identical (0); anything above this diverged.
REFERENCE_NOISE = 1e-12
# A runtime layer "diverged" when err > RUNTIME_DIVERGE * baseline err + RUNTIME_FLOOR_SHARE * floor.
RUNTIME_DIVERGE, RUNTIME_FLOOR_SHARE = 1.5, 0.1
# precision-loss: measured error within this factor of the expected cast error.
CAST_FACTOR = 3.0
CAST_BIAS_LIMIT = 0.3  # |d||x||| / ||x - x'|| above which the change is a bias, not rounding
CAST_UNIT = {"float16": 2.0**-11, "bfloat16": 2.0**-8}
SERIES_LIMIT = 2000


def model_hints(spec, run, baseline: dict | None, report: dict) -> list[dict]:
    """All hints for one model report (``report`` is the entry :func:`verdict.model_report` built)."""
    try:
        return _clean(_hints(spec, run, baseline, report))
    except Exception as exc:  # noqa: BLE001 - explanations must never break the verdict
        return [{"kind": "hints-unavailable", "layer": "(model)", "provider": "", "message":
                 f"root-cause hints could not be computed: {type(exc).__name__}: {exc}", "evidence": {}}]


def _hints(spec, run, baseline: dict | None, report: dict) -> list[dict]:
    if baseline is None or run.error or not run.layers:
        return _nonfinite_hints(run, None) if run.layers else []
    ctx = _Context(spec, run, baseline, report)
    out: list[dict] = []
    out += _change_hints(ctx)
    out += _layout_hints(ctx)
    out += _precision_hints(ctx)
    out += _nonfinite_hints(run, baseline)
    out += _propagation_hints(ctx)
    out += _graph_hints(ctx)
    return out


class _Context:
    def __init__(self, spec, run, baseline: dict, report: dict):
        self.spec, self.run, self.baseline, self.report = spec, run, baseline, report
        self.order = [layer.name for layer in run.layers]
        self.index = {name: i for i, name in enumerate(self.order)}
        self.ref_now = {layer.name: layer.fp for layer in run.layers}
        self.ref_base = {e["name"]: Fingerprint.from_dict(e["fp"]) for e in baseline.get("layers", [])}
        self.entries = report.get("providers", [])
        self.ref_entry = next((e for e in self.entries if e.get("role") == "reference"), None)
        self.pruns = {p.name + ":" + p.precision: p for p in run.providers}
        self.ref_dtype = run.reference.get("dtype", "float64")

    def rows(self, entry: dict) -> dict[str, dict]:
        return {r["layer"]: r for r in entry.get("layers", [])}

    def prun(self, entry: dict):
        return self.pruns.get(f"{entry['name']}:{entry['precision']}")

    def ref_first_index(self) -> int | None:
        fr = (self.ref_entry or {}).get("first_regression")
        return None if fr is None else self.index.get(fr["layer"], len(self.order))


def _hint(kind: str, layer: str, provider: str, message: str, **evidence) -> dict:
    return {"kind": kind, "layer": layer, "provider": provider, "message": message, "evidence": evidence}


# model-change / runtime-change ------------------------------------------------------------

def _change_hints(ctx: _Context) -> list[dict]:
    out = []
    meta_b, meta_n = ctx.baseline.get("meta", {}), ctx.run.meta
    wb, wn = meta_b.get("weights_digest"), meta_n.get("weights_digest")
    weights_changed = None if not wb or not wn else wb != wn
    gb, gn = meta_b.get("graph_digest"), meta_n.get("graph_digest")
    graph_changed = None if not gb or not gn else gb != gn
    ref_first = ctx.ref_first_index()
    if ctx.ref_entry and ctx.ref_entry.get("first_regression"):
        fr = ctx.ref_entry["first_regression"]
        moved = [r["layer"] for r in ctx.ref_entry["layers"] if r["status"] in ("fail", "new", "missing")]
        if weights_changed:
            why = "its weights changed (the weights digest differs from the baseline's)"
        elif weights_changed is False:
            why = ("its code changed: the weights digest equals the baseline's, so the forward, a module type or a "
                   "hyperparameter (eps, scale, padding, activation) differs")
        else:
            why = "its code or weights changed (no weights digest to tell which)"
        out.append(_hint(
            "model-change", fr["layer"], "torch-cpu",
            f"the {ctx.ref_dtype} reference moved first at {fr['layer']} ({fr['check']}"
            + (f" {fr['value']:.3g}" if isinstance(fr.get("value"), float) else "") + f"): the model changed, {why}",
            check=fr["check"], value=fr.get("value"), threshold=fr.get("threshold"), weights_changed=weights_changed,
            cause="weights" if weights_changed else ("code" if weights_changed is False else "unknown"),
            weights_digest_baseline=wb, weights_digest_now=wn, graph_changed=graph_changed,
            layers_moved=len(moved), first_layers_moved=moved[:5]))
    for entry in ctx.entries:
        if entry.get("role") != "runtime" or not entry.get("first_regression"):
            continue
        fr = entry["first_regression"]
        idx = ctx.index.get(fr["layer"], len(ctx.order))
        ref_moved = ref_first is not None and ref_first <= idx
        row = ctx.rows(entry).get(fr["layer"], {})
        base, value = row.get("baseline"), fr.get("value")
        ratio = value / base if isinstance(value, float) and isinstance(base, float) and base > 0 else None
        where = "the model also changed at or before this layer (the reference moved), and" if ref_moved else \
            "the reference did not move at or before this layer:"
        out.append(_hint(
            "runtime-change", fr["layer"], entry["name"],
            f"{entry['name']} ({entry['precision']}): {where} only this runtime's error against the reference "
            f"moved at {fr['layer']} ({fr['check']}"
            + (f" {value:.3g}, baseline {base:.3g}" if isinstance(value, float) and isinstance(base, float) else "")
            + ")",
            check=fr["check"], value=value, baseline=base, threshold=fr.get("threshold"), ratio=ratio,
            reference_moved=ref_moved, reference_drift_here=_ref_value(ctx, fr["layer"]),
            graph_changed=graph_changed, weights_changed=weights_changed))
    return out


def _ref_value(ctx: _Context, layer: str) -> float | None:
    row = ctx.rows(ctx.ref_entry).get(layer) if ctx.ref_entry else None
    return None if row is None else row.get("value")


# layout -----------------------------------------------------------------------------------

def same_distribution(a: Fingerprint, b: Fingerprint, rtol: float) -> tuple[bool, dict]:
    """Counts, min/max, moments and quantiles equal within ``rtol`` (relative to the spread)."""
    if tuple(a.shape) != tuple(b.shape) or a.finite == 0 or b.finite == 0:
        return False, {}
    if (a.nan, a.posinf, a.neginf) != (b.nan, b.posinf, b.neginf):
        return False, {}
    scale = max(math.sqrt(a.sumsq / a.finite), math.sqrt(b.sumsq / b.finite), 1e-300)
    diffs = {
        "quantiles": max(abs(x - y) for x, y in zip(a.quantiles, b.quantiles, strict=True)) / scale,
        "min": abs(a.min - b.min) / scale, "max": abs(a.max - b.max) / scale,
        "mean": abs(a.mean - b.mean) / scale, "std": abs(a.std - b.std) / scale,
        "meanabs": abs(a.meanabs - b.meanabs) / scale,
    }
    zero_tol = max(2, int(rtol * a.count * 10))  # a float32 runtime may flush/round a few values to 0
    same = all(v <= rtol for v in diffs.values()) and abs(a.zero - b.zero) <= (0 if rtol < 1e-6 else zero_tol)
    return same, diffs


def _moved(a: Fingerprint, b: Fingerprint, err: float | None) -> float | None:
    """Distance between the tensors (sketch), relative to their spread (std * sqrt(n))."""
    if err is None:
        if a.sketch is None or b.sketch is None:
            return None
        err = relative_error(a, b)
    spread = b.std * math.sqrt(b.finite)
    return None if spread <= 0 else err * b.l2 / spread


def _layout_hints(ctx: _Context) -> list[dict]:
    out = []
    if ctx.ref_entry:
        found = []
        for row in ctx.ref_entry["layers"]:
            if row["status"] != "fail" or row["check"] != "reference-drift":
                continue
            now, base = ctx.ref_now.get(row["layer"]), ctx.ref_base.get(row["layer"])
            if now is None or base is None:
                continue
            rtol = LAYOUT_RTOL.get(ctx.ref_dtype, 1e-5)
            same, diffs = same_distribution(now, base, rtol)
            moved = _moved(now, base, row["value"]) if same else None
            if same and moved is not None and moved > LAYOUT_MIN_MOVE:
                found.append((row["layer"], row["value"], moved, diffs, rtol))
        if found:
            layer, value, moved, diffs, rtol = found[0]
            out.append(_hint(
                "layout", layer, "torch-cpu",
                f"{layer}: the reference has the same values as in the baseline (quantiles, moments, counts equal "
                f"within {rtol:g}) in different positions (sketch distance {value:.3g} relative): a transpose, "
                "permutation, layout or indexing change",
                compared="reference vs baseline", relative_distance=value, distance_over_spread=moved,
                max_relative_stat_difference=max(diffs.values()), rtol=rtol, shape=list(ctx.ref_now[layer].shape),
                also_at=[f[0] for f in found[1:6]]))
    for entry in ctx.entries:
        if entry.get("role") != "runtime":
            continue
        prun = ctx.prun(entry)
        if prun is None:
            continue
        for row in entry["layers"]:
            if row["status"] != "fail" or row["check"] not in ("error-growth", "ceiling"):
                continue
            pl, ref = prun.layers.get(row["layer"]), ctx.ref_now.get(row["layer"])
            if pl is None or pl.fp is None or ref is None:
                continue
            rtol = max(LAYOUT_RTOL.get(prun.precision, 1e-5), LAYOUT_RTOL.get(ctx.ref_dtype, 1e-5))
            same, diffs = same_distribution(pl.fp, ref, rtol)
            moved = _moved(pl.fp, ref, row["value"]) if same else None
            if same and moved is not None and moved > LAYOUT_MIN_MOVE:
                out.append(_hint(
                    "layout", row["layer"], entry["name"],
                    f"{entry['name']} at {row['layer']}: same values as the reference (quantiles, moments, counts "
                    f"equal within {rtol:g}) in different positions (error {row['value']:.3g}): a layout or "
                    "transpose bug in this runtime or its graph",
                    compared=f"{entry['name']} vs reference", relative_distance=row["value"],
                    distance_over_spread=moved, max_relative_stat_difference=max(diffs.values()), rtol=rtol,
                    shape=list(ref.shape)))
                break
    return out


# precision-loss ---------------------------------------------------------------------------

def _quantile_sample(fp: Fingerprint, n: int = 20000) -> np.ndarray:
    """Values drawn (deterministically) from the fingerprint's quantile function."""
    probs = np.array([0.0, *QUANTILES, 1.0])
    vals = np.array([fp.min, *fp.quantiles, fp.max], dtype=np.float64)
    p = (np.arange(n) + 0.5) / n
    return np.interp(p, probs, vals)


def _bf16(x: np.ndarray) -> np.ndarray:
    u = x.astype(np.float32).view(np.uint32)
    rounded = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return rounded.view(np.float32).astype(np.float64)


def expected_cast_error(fp: Fingerprint, dtype: str) -> float:
    """Relative L2 error of a ``dtype`` round trip of a tensor with this fingerprint (estimated)."""
    return expected_cast(fp, dtype)[0]


def expected_cast(fp: Fingerprint, dtype: str) -> tuple[float, float]:
    """(relative L2 error, norm shift / error) of a ``dtype`` round trip, on values drawn from the
    fingerprint's quantile function. The norm shift is ~0 for rounding of normal numbers and ~1
    where the cast flushes values to zero (underflow) or saturates them."""
    if fp.finite == 0 or not all(math.isfinite(v) for v in (fp.min, fp.max, *fp.quantiles)):
        return math.nan, math.nan
    x = _quantile_sample(fp)
    with np.errstate(over="ignore", invalid="ignore"):
        y = x.astype(np.float16).astype(np.float64) if dtype == "float16" else _bf16(x)
    norm = float(np.linalg.norm(x))
    if norm == 0:
        return 0.0, 0.0
    err = float(np.linalg.norm(y - x))
    if not math.isfinite(err):
        return math.inf, math.nan
    return err / norm, (abs(float(np.linalg.norm(y)) - norm) / err if err > 0 else 0.0)


def _precision_hints(ctx: _Context) -> list[dict]:
    """A rounding error is unbiased: it moves values by up to u|x| each, in no common direction, so
    the tensor's norm barely moves (|d||x||| / ||x-x'|| ~ 1/sqrt(n)). A scaled weight, a changed eps or
    scale move the norm by about the whole error: that tells them apart from a cast of equal size."""
    out = []
    for entry in ctx.entries:
        fr = entry.get("first_regression")
        if not fr or fr.get("check") not in ("reference-drift", "error-growth", "ceiling"):
            continue
        value = fr.get("value")
        if not isinstance(value, float) or value <= 0:
            continue
        is_ref = entry.get("role") == "reference"
        if is_ref:
            now, ref = ctx.ref_now.get(fr["layer"]), ctx.ref_base.get(fr["layer"])
        else:
            prun = ctx.prun(entry)
            pl = None if prun is None else prun.layers.get(fr["layer"])
            now, ref = (None if pl is None else pl.fp), ctx.ref_now.get(fr["layer"])
        if now is None or ref is None or ref.l2 <= 0:
            continue
        cast = {d: expected_cast(ref, d) for d in CAST_UNIT}
        expected = {d: e for d, (e, _) in cast.items()}
        # For a runtime, what counts is the error beyond its baseline error.
        row = ctx.rows(entry).get(fr["layer"], {})
        base = 0.0 if is_ref else (row.get("baseline") or 0.0)
        excess = math.sqrt(max(value**2 - base**2, 0.0))
        if excess <= 0:
            continue
        bias = abs(now.l2 - ref.l2) / ref.l2 / excess  # ~1/sqrt(n) for rounding, ~1 for a scale change
        base_limit = max(CAST_BIAS_LIMIT, 3.0 / math.sqrt(max(ref.finite, 1)))
        # A cast that flushes small values to zero is biased too: allow the bias the cast itself gives.
        fits = {d: e for d, e in expected.items()
                if math.isfinite(e) and e > 0 and e / CAST_FACTOR <= excess <= e * CAST_FACTOR
                and bias <= max(base_limit, 1.5 * (cast[d][1] if math.isfinite(cast[d][1]) else 0.0))}
        if not fits:
            continue
        dtype = min(fits, key=lambda d: abs(math.log(excess / fits[d])))
        bias_limit = max(base_limit, 1.5 * (cast[dtype][1] if math.isfinite(cast[dtype][1]) else 0.0))
        outside = fits[dtype] > 30 * CAST_UNIT[dtype]
        out.append(_hint(
            "precision-loss", fr["layer"], entry["name"],
            f"{entry['name']} ({entry['precision']}) at {fr['layer']}: the error {excess:.3g} matches a {dtype} round "
            f"trip of this tensor (expected {fits[dtype]:.3g}, unit roundoff {CAST_UNIT[dtype]:.3g}), with the "
            f"norm shift such a cast gives ({bias:.2g} of the error, limit {bias_limit:.2g}): a cast to {dtype} "
            "(autocast, .half(), a reduced-precision kernel or EP setting)"
            + (f"; most of it is underflow/overflow: this tensor's values lie outside {dtype}'s normal range"
               if outside else ""),
            dtype=dtype, measured=excess, expected=fits[dtype], ratio=excess / fits[dtype],
            expected_float16=expected["float16"], expected_bfloat16=expected["bfloat16"], factor=CAST_FACTOR,
            norm_shift_over_error=bias, norm_shift_limit=bias_limit,
            expected_norm_shift=cast[dtype][1], outside_normal_range=outside,
            estimated_from="reference fingerprint quantiles (min, 9 quantiles, max)"))
    return out


# nonfinite-origin -------------------------------------------------------------------------

def _bad(fp: Fingerprint | None) -> int:
    return 0 if fp is None else fp.nan + fp.posinf + fp.neginf


def _first_nonfinite(names_fps) -> tuple[str, Fingerprint] | None:
    return next(((n, fp) for n, fp in names_fps if _bad(fp)), None)


def _nonfinite_hints(run, baseline: dict | None) -> list[dict]:
    out = []
    base_first = None
    if baseline is not None:
        base_first = _first_nonfinite((e["name"], Fingerprint.from_dict(e["fp"])) for e in baseline.get("layers", []))
    sources = [("torch-cpu", run.reference.get("dtype", "float64"), [(x.name, x.fp) for x in run.layers])]
    for prun in run.providers:
        if prun.status == "ok":
            sources.append((prun.name, prun.precision, [(x.name, prun.layers[x.name].fp) for x in run.layers
                                                         if x.name in prun.layers]))
    for provider, precision, names_fps in sources:
        hit = _first_nonfinite(names_fps)
        if hit is None:
            continue
        layer, fp = hit
        in_base = None if base_first is None else base_first[0]
        out.append(_hint(
            "nonfinite-origin", layer, provider,
            f"{provider} ({precision}): NaN/Inf first appear at {layer} ({fp.nan} NaN, {fp.posinf} +Inf, "
            f"{fp.neginf} -Inf of {fp.count})"
            + ("" if baseline is None else (" ; the baseline reference has none" if in_base is None
                                             else f" ; the baseline reference's first is {in_base}")),
            precision=precision, nan=fp.nan, posinf=fp.posinf, neginf=fp.neginf, count=fp.count,
            baseline_reference_first=in_base))
    return out


# introduced-vs-inherited ------------------------------------------------------------------

def _propagation_hints(ctx: _Context) -> list[dict]:
    out = []
    for entry in ctx.entries:
        fr = entry.get("first_regression")
        if not fr or fr["layer"] not in ctx.index:
            continue
        rows = ctx.rows(entry)
        series, diverged = [], []
        for name in ctx.order:
            row = rows.get(name)
            value = None if row is None else row.get("value")
            if row is not None and row.get("check") in ("nonfinite", "shape") and row["status"] == "fail":
                value = math.inf
            series.append((name, value, None if row is None else row.get("baseline")))
            diverged.append(_diverged(ctx, entry, name, value, None if row is None else row.get("baseline")))
        k = ctx.index[fr["layer"]]
        origin = next((i for i in range(k + 1) if diverged[i]), k)
        before = [v for _, v, _ in series[:k] if isinstance(v, float) and math.isfinite(v)]
        at = series[k][1]
        is_ref = entry.get("role") == "reference"
        growth = (at / max(before) if isinstance(at, float) and before and max(before) > 0 else None)
        final = next(((n, v) for n, v, _ in reversed(series) if v is not None), (None, None))
        verdict = "introduced" if origin == k else "inherited"
        what = "drift against the baseline reference" if is_ref else "error against the reference"
        if verdict == "introduced":
            msg = (f"{entry['name']} ({entry['precision']}): the {what} was introduced at {fr['layer']}: every earlier "
                   "layer is clean")
        else:
            o_base = series[origin][2]
            under = "below its threshold" if isinstance(o_base, float) or is_ref else \
                "not gated there: no baseline value for that layer"
            msg = (f"{entry['name']} ({entry['precision']}): {fr['layer']} is the first layer over its threshold, but "
                   f"the {what} was inherited: it first diverged at {ctx.order[origin]} "
                   f"({_fmt(series[origin][1])}, {under})")
        if final[0] is not None and final[0] != fr["layer"]:
            msg += f"; at the output ({final[0]}) it is {_fmt(final[1])}"
        out.append(_hint(
            "introduced-vs-inherited", fr["layer"], entry["name"], msg,
            verdict=verdict, origin=ctx.order[origin], first_regressed=fr["layer"],
            metric="reference-drift" if is_ref else "error-vs-reference",
            noise=REFERENCE_NOISE if is_ref else f"{RUNTIME_DIVERGE}x baseline + {RUNTIME_FLOOR_SHARE}x floor",
            value_at_layer=at, max_before=max(before) if before else 0.0, growth_at_layer=growth,
            output_layer=final[0], output_value=final[1],
            series=[[n, v] for n, v, _ in series[:SERIES_LIMIT]],
            baseline_series=None if is_ref else [[n, b] for n, _, b in series[:SERIES_LIMIT]]))
    return out


def _diverged(ctx: _Context, entry: dict, name: str, value, base) -> bool:
    if value is None:
        return False
    if not math.isfinite(value):
        return True
    if entry.get("role") == "reference":
        return value > REFERENCE_NOISE
    floor = ctx.spec.tolerance_for(name, entry.get("precision")).floor if ctx.spec is not None else 1e-6
    if base is None or not isinstance(base, float) or math.isnan(base):
        return value > floor  # no baseline value (e.g. the layer was folded then): only the floor tells
    return value > RUNTIME_DIVERGE * base + RUNTIME_FLOOR_SHARE * floor


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3g}"


# export-graph-change ----------------------------------------------------------------------

def _graph_hints(ctx: _Context) -> list[dict]:
    out = []
    meta_b, meta_n = ctx.baseline.get("meta", {}), ctx.run.meta
    ops_b, ops_n = meta_b.get("op_types"), meta_n.get("op_types")
    gb, gn = meta_b.get("graph_digest"), meta_n.get("graph_digest")
    weights_same = meta_b.get("weights_digest") == meta_n.get("weights_digest")
    added = sorted(set(ops_n or ()) - set(ops_b or ())) if ops_b is not None and ops_n is not None else []
    removed = sorted(set(ops_b or ()) - set(ops_n or ())) if ops_b is not None and ops_n is not None else []
    status_changes: dict[str, list] = {}
    for pname, devices in ctx.baseline.get("providers", {}).items():
        for prun in ctx.run.providers:
            if prun.name != pname or prun.status != "ok":
                continue
            base_entry = devices.get(prun.device) or next(
                (v for v in devices.values() if v.get("precision") == prun.precision), None)
            if base_entry is None:
                continue
            changes = []
            for name in ctx.order:
                b, n = base_entry["layers"].get(name), prun.layers.get(name)
                if b is not None and n is not None and b["status"] != n.status:
                    changes.append([name, b["status"], n.status])
            if changes:
                status_changes[pname] = changes
    graph_changed = bool(gb and gn and gb != gn)
    # The graph digest alone is no signal: the exporter records source paths and stack traces in node
    # metadata, so the same model exported from another checkout has another digest.
    if added or removed:
        what = []
        if added:
            what.append(f"op types added: {', '.join(added)}")
        if removed:
            what.append(f"op types removed: {', '.join(removed)}")
        out.append(_hint(
            "export-graph-change", "(model)", "(export)", "the shipped ONNX graph changed: " + "; ".join(what),
            op_types_added=added, op_types_removed=removed, graph_digest_baseline=gb, graph_digest_now=gn,
            graph_digest_changed=graph_changed, weights_changed=not weights_same))
    for pname, changes in status_changes.items():
        became = [c for c in changes if c[2] in ("folded", "absent")]
        back = [c for c in changes if c[2] == "ok"]
        text = []
        if became:
            text.append(f"{len(became)} layer(s) became folded/absent (first: {became[0][0]} {became[0][1]} -> "
                        f"{became[0][2]})")
        if back:
            text.append(f"{len(back)} layer(s) have their own value again (first: {back[0][0]} {back[0][1]} -> ok)")
        out.append(_hint(
            "export-graph-change", changes[0][0], pname, f"{pname}: " + "; ".join(text)
            + " compared with the baseline: the exported graph's structure changed there",
            changes=changes[:200], became_folded_or_absent=len(became), became_ok=len(back)))
    return out


# JSON hygiene -----------------------------------------------------------------------------

def _clean(obj: Any) -> Any:
    """Plain JSON: floats finite or None, numpy scalars converted, tuples as lists."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj
