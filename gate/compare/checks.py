"""Per-layer checks (README, "Verdict").

The float64 reference is compared with the reference recorded in the baseline: any move
beyond its tolerance is a change of the model itself (code or weights), localized at the
first layer that moved. Each runtime is judged by its error against *today's* reference,
compared with the error it had in the baseline (growth factor plus floor): a model change
moves reference and runtimes together and leaves runtime errors alone, while a runtime
regression leaves the reference alone. NaN/Inf that the reference does not have always fail.
"""

from __future__ import annotations

import math
from typing import Any

from gate.capture.records import ROOT
from gate.config import ModelSpec, Tolerance
from gate.fingerprint import Fingerprint, relative_error
from gate.runs import LayerInfo, ModelRun, ProviderRun

TINY = 1e-300
NOISE_MARGIN = 4.0  # thresholds stay at least this many times the calibrated noise away


def _row(layer: LayerInfo, status: str, check: str | None = None, value: float | None = None,
         threshold: float | None = None, baseline: float | None = None, message: str | None = None) -> dict:
    return {"layer": layer.name, "type": layer.type, "status": status, "check": check,
            "value": _num(value), "threshold": _num(threshold), "baseline": _num(baseline), "message": message}


def _num(v: float | None) -> float | None:
    return None if v is None else float(v)


def _nonfinite(fp: Fingerprint) -> tuple[int, int, int]:
    return (fp.nan, fp.posinf, fp.neginf)


def _describe_nonfinite(counts: tuple[int, int, int]) -> str:
    parts = [f"{n} {label}" for n, label in zip(counts, ("NaN", "+Inf", "-Inf"), strict=True) if n]
    return ", ".join(parts) or "none"


def degenerate(fp: Fingerprint) -> str | None:
    """An output that carries no information: every element zero, or none finite."""
    if fp.count == 0:
        return None
    if fp.nan + fp.posinf + fp.neginf == fp.count:
        return "every element is NaN/Inf"
    if fp.zero == fp.count:
        return "every element is zero"
    return None


def reference_rows(run: ModelRun, baseline: dict, spec: ModelSpec) -> list[dict]:
    base_layers = {entry["name"]: entry for entry in baseline["layers"]}
    rows = []
    both64 = run.reference.get("dtype") == "float64" and baseline["reference"].get("dtype") == "float64"
    for layer in run.layers:
        tol = spec.tolerance_for(layer.name)
        entry = base_layers.get(layer.name)
        # Never tighter than the run-to-run noise calibration measured for this layer.
        noise = (entry or {}).get("noise") or 0.0
        limit = max(tol.reference if both64 else max(tol.reference, 1e-5), NOISE_MARGIN * noise)
        if entry is None:
            rows.append(_row(layer, "new", "structure", message="layer is not in the baseline: the model's "
                             "structure changed"))
            continue
        base = Fingerprint.from_dict(entry["fp"])
        now = layer.fp
        dead = degenerate(now) if layer.name.startswith(ROOT) else None
        if dead:
            rows.append(_row(layer, "fail", "degenerate", message=f"the model's output is degenerate: {dead}; "
                             "a gate never passes such a model, baseline or not"))
        elif tuple(now.shape) != tuple(base.shape):
            rows.append(_row(layer, "fail", "shape", message=f"reference shape {list(now.shape)}, "
                             f"baseline {list(base.shape)}"))
        elif _nonfinite(now) != _nonfinite(base):
            rows.append(_row(layer, "fail", "nonfinite", sum(_nonfinite(now)), sum(_nonfinite(base)),
                             sum(_nonfinite(base)),
                             message=f"reference has {_describe_nonfinite(_nonfinite(now))}; baseline "
                             f"{_describe_nonfinite(_nonfinite(base))}"))
        else:
            change = relative_error(now, base)
            if change > limit:
                rows.append(_row(layer, "fail", "reference-drift", change, limit, 0.0,
                                 message=f"the {run.reference['dtype']} reference moved by {change:.3g} "
                                 f"(relative L2; limit {limit:.3g}): the model's code or weights changed"))
            else:
                rows.append(_row(layer, "pass", "reference-drift", change, limit, 0.0))
    current = {layer.name for layer in run.layers}
    for name, entry in base_layers.items():
        if name not in current:
            rows.append({"layer": name, "type": entry.get("type", ""), "status": "missing", "check": "structure",
                         "value": None, "threshold": None, "baseline": None,
                         "message": "layer is in the baseline but did not run: the model's structure changed"})
    return rows


def runtime_rows(run: ModelRun, prun: ProviderRun, entry: dict | None, spec: ModelSpec) -> list[dict]:
    """Rows of one runtime; ``entry`` is its baseline entry for this device class (None: no baseline)."""
    base_layers = entry["layers"] if entry else {}
    rows = []
    for layer in run.layers:
        tol: Tolerance = spec.tolerance_for(layer.name, prun.precision)
        pl = prun.layers.get(layer.name)
        if pl is None:
            rows.append(_row(layer, "absent", message="not captured on this provider"))
            continue
        if pl.status in ("folded", "absent"):
            rows.append(_row(layer, pl.status, message=pl.reason))
            continue
        fp, ref = pl.fp, layer.fp
        if tuple(fp.shape) != tuple(ref.shape):
            rows.append(_row(layer, "fail", "shape", message=f"{prun.name} shape {list(fp.shape)}, reference "
                             f"{list(ref.shape)}"))
            continue
        if _nonfinite(fp) != _nonfinite(ref):
            rows.append(_row(layer, "fail", "nonfinite", sum(_nonfinite(fp)), sum(_nonfinite(ref)),
                             message=f"{prun.name} has {_describe_nonfinite(_nonfinite(fp))}; reference "
                             f"{_describe_nonfinite(_nonfinite(ref))}"))
            continue
        err = pl.err if pl.err is not None else relative_error(fp, ref)
        base = base_layers.get(layer.name, {}).get("err")
        noise = base_layers.get(layer.name, {}).get("noise") or 0.0
        if err > tol.ceiling:
            rows.append(_row(layer, "fail", "ceiling", err, tol.ceiling, base,
                             message=f"error {err:.3g} against the reference is over the ceiling {tol.ceiling:.3g}"))
        elif base is None or (isinstance(base, float) and math.isnan(base)):
            if entry is None:  # no baseline for this provider at all: the provider says so
                rows.append(_row(layer, "pass", "error-growth", err, None, None))
            elif err > tol.floor:
                # Not observable in the baseline (folded, absent): with nothing to grow from,
                # the floor is the limit, so a graph change that un-fuses a layer is still checked.
                rows.append(_row(layer, "fail", "error-growth", err, tol.floor, None,
                                 message=f"no baseline value (the layer was not observable then); error {err:.3g} "
                                 f"against the reference is over the floor {tol.floor:.0e}"))
            else:
                rows.append(_row(layer, "new", "error-growth", err, tol.floor, None,
                                 message="no baseline value for this layer; within the floor"))
        else:
            threshold = max(tol.growth * base + tol.floor, base + NOISE_MARGIN * noise)
            if err > threshold:
                rows.append(_row(layer, "fail", "error-growth", err, threshold, base,
                                 message=f"error against the reference {err:.3g} (baseline {base:.3g}, limit "
                                 f"{threshold:.3g} = {tol.growth:g}x + {tol.floor:.0e})"))
            else:
                rows.append(_row(layer, "pass", "error-growth", err, threshold, base))
    return rows


def is_failure(row: dict) -> bool:
    """A failed check, or a layer the baseline does not know / no longer sees. A runtime row
    that is merely new to the baseline (no recorded error yet) is not a failure."""
    return row["status"] in ("fail", "missing") or (row["status"] == "new" and row["check"] == "structure")


def first_failure(rows: list[dict], order: dict[str, int]) -> dict | None:
    failing = [r for r in rows if is_failure(r)]
    if not failing:
        return None
    return min(failing, key=lambda r: order.get(r["layer"], len(order)))


def regression(row: dict) -> dict[str, Any]:
    return {key: row[key] for key in ("layer", "type", "check", "value", "threshold", "message")}
