"""What a sweep compares beyond the float64 reference: ``pair`` (two cases on the same provider,
e.g. a custom RMSNorm against PyTorch's own) and ``anchor`` (every provider against one provider,
e.g. the runtimes against ``torch-cpu``). Both compare the cases' outputs by their sketches."""

from __future__ import annotations

from collections.abc import Iterable

from gate.config import Config, ModelSpec, Sweep
from gate.core.layers import is_output
from gate.core.runs import ModelRun, ProviderRun
from gate.core.status import Check, ComparisonStatus, LayerStatus, RunStatus
from gate.core.target import REFERENCE_PROVIDER
from gate.fingerprint import Fingerprint
from gate.verdict.against_reference import error_against

from .notes import Comparison


def outputs_of(run: ModelRun, prun: ProviderRun | None) -> dict[str, Fingerprint]:
    """The output fingerprints of a provider (None: the float64 reference) that carry a sketch."""
    if prun is None:
        fps = {x.name: x.fp for x in run.layers if is_output(x.name)}
    else:
        fps = {n: pl.fp for n, pl in prun.layers.items() if is_output(n) and pl.status == LayerStatus.OK and pl.fp is not None}
    return {n: fp for n, fp in fps.items() if fp.sketch is not None}


def distance(a: dict[str, Fingerprint], b: dict[str, Fingerprint]) -> float | None:
    """Largest error of ``a`` against ``b`` over the outputs both have, same shape: relative L2, or beside
    fills the move of an order statistic (``error_against``, as a runtime's against the reference)."""
    return max((e for n in a if n in b and (e := error_against(a[n], b[n])) is not None), default=None)


def judged(kind: str, provider: str, other: str, error: float | None, tolerance: float) -> Comparison:
    status = ComparisonStatus.UNMEASURED if error is None else (
        ComparisonStatus.FAIL if error > tolerance else ComparisonStatus.PASS)
    return Comparison(kind=Check(kind), provider=provider, other=other, error=error, tolerance=tolerance, status=status)


def _targets(run: ModelRun) -> dict[str, ProviderRun | None]:
    out: dict[str, ProviderRun | None] = {f"{REFERENCE_PROVIDER}:float64": None}
    for p in run.providers:
        if p.status == RunStatus.OK:
            out.setdefault(p.name if p.precision == "float32" else f"{p.name}:{p.precision}", p)
    return out


def _pairs(sweep: Sweep, specs: list[ModelSpec], runs: dict[str, ModelRun]) -> Iterable[tuple[str, Comparison]]:
    cases = [(s, dict(s.sweep.values)) for s in specs if s.sweep is not None]
    by_values = {tuple(sorted(values.items())): s for s, values in cases}
    for pair in sweep.pairs:
        for left, values in cases:
            if values.get(pair.axis) != pair.left:
                continue
            right = by_values.get(tuple(sorted({**values, pair.axis: pair.right}.items())))
            if right is None:
                continue
            a, b = runs.get(left.name), runs.get(right.name)
            if a is None or b is None or a.error or b.error:
                continue
            tb = _targets(b)
            for label, prun in _targets(a).items():
                if label in tb:
                    error = distance(outputs_of(a, prun), outputs_of(b, tb[label]))
                    yield left.name, judged(Check.PAIR, label, right.name, error, pair.tolerance)


def _anchored(sweep: Sweep, specs: list[ModelSpec], runs: dict[str, ModelRun]) -> Iterable[tuple[str, Comparison]]:
    if sweep.anchor is None:
        return
    for spec in specs:
        run = runs.get(spec.name)
        if run is None or run.error:
            continue
        anchor = next((p for p in run.providers if p.name == sweep.anchor and p.status == RunStatus.OK), None)
        if anchor is None:
            continue
        for label, prun in _targets(run).items():
            if prun is not None and prun is not anchor:
                error = distance(outputs_of(run, prun), outputs_of(run, anchor))
                yield spec.name, judged(Check.ANCHOR, label, sweep.anchor, error, spec.tolerance.ceiling)


def compare(config: Config, runs: dict[str, ModelRun]) -> dict[str, list[Comparison]]:
    out: dict[str, list[Comparison]] = {}
    for sweep in config.sweeps:
        specs = [s for s in config.models if s.sweep is not None and s.sweep.sweep == sweep.name]
        found = list(_pairs(sweep, specs, runs)) + list(_anchored(sweep, specs, runs))
        for case, comparison in found:
            out.setdefault(case, []).append(comparison)
    return out
