"""``nonfinite-origin``: per target (and the reference), the first layer holding NaN/Inf."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from gate.core.spans import span
from gate.core.status import RunStatus
from gate.core.target import REFERENCE_PROVIDER
from gate.fingerprint import Fingerprint
from gate.verdict.hints.context import make
from gate.verdict.notes import Hint

if TYPE_CHECKING:
    from gate.core.runs import ModelRun
    from gate.formats.baseline import Baseline


def _first_nonfinite(names_fps: Iterable[tuple[str, Fingerprint | None]]) -> tuple[str, Fingerprint] | None:
    return next(((n, fp) for n, fp in names_fps if fp is not None and fp.nan + fp.posinf + fp.neginf), None)


def hints(run: ModelRun, baseline: Baseline | None) -> list[Hint]:
    out = []
    base_first = None if baseline is None else _first_nonfinite((x.name, x.fp) for x in baseline.layers)
    sources: list[tuple[str, str | None, list[tuple[str, Fingerprint | None]]]] = [
        (REFERENCE_PROVIDER, run.reference_dtype, [(x.name, x.fp) for x in run.layers])]
    sources += [(prun.name, prun.precision, [(x.name, prun.layers[x.name].fp) for x in run.layers
                                             if x.name in prun.layers])
                for prun in run.providers if prun.status == RunStatus.OK]
    for provider, precision, names_fps in sources:
        hit = _first_nonfinite(names_fps)
        if hit is None:
            continue
        layer, fp = hit
        in_base = None if base_first is None else base_first[0]
        note = "" if baseline is None else (" ; the baseline reference has none" if in_base is None
                                            else f" ; the baseline reference's first is {in_base}")
        out.append(make(
            "nonfinite-origin", layer, provider,
            f"{provider} ({precision}): NaN/Inf first appear at {span(layer)} "
            f"({fp.nan} NaN, {fp.posinf} +Inf, "
            f"{fp.neginf} -Inf of {fp.count}){note}",
            precision=precision, nan=fp.nan, posinf=fp.posinf, neginf=fp.neginf, count=fp.count,
            baseline_reference_first=in_base))
    return out
