"""Runs and baselines built by hand for the verdict's unit tests: no model, no torch.

Fingerprints are made with exact sketches, so every error and drift the checks compute is a
number the test chose: the sketch is a basis vector scaled to the tensor's norm, and a second
fingerprint moves along another basis vector by ``move`` (relative to that norm).
"""

from __future__ import annotations

import numpy as np

from gate.config import LayerTolerance, ModelSpec, Tolerance
from gate.core.runs import LayerInfo, Meta, ModelRun, ProviderLayer, ProviderRun
from gate.core.status import LayerStatus
from gate.core.target import Target
from gate.fingerprint import QUANTILES, SKETCH_WIDTH, STATS, Fingerprint
from gate.formats.baseline import Baseline, BaselineLayer, Entry, EntryLayer

CPU = "x86_64-avx2"
DIGEST = "d" * 64


def fp(move: float = 0.0, *, shape: tuple[int, ...] = (2, 4), nan: int = 0, zero: int = 0, axis: int = 1,
       dtype: str = "float64") -> Fingerprint:
    """A fingerprint of norm 1 whose sketch is e0 + move * e_axis (so two of them are ``move`` apart)."""
    sketch = np.zeros(SKETCH_WIDTH)
    sketch[0] = 1.0
    sketch[axis] = move
    count = int(np.prod(shape))
    stats = {k: 0 if kind == "count" else 1.0 for k, kind in STATS.items()}  # every other statistic 0, or 1.0
    stats.update(count=count, nan=nan, zero=zero, min=-1.0, sum=0.0)
    quantiles = tuple(np.linspace(-1, 1, len(QUANTILES)))
    return Fingerprint(shape=shape, dtype=dtype, quantiles=quantiles, sketch=sketch, **stats)


def spec(tolerance: Tolerance | None = None, layers: dict[str, dict[str, float]] | None = None) -> ModelSpec:
    rules = tuple(LayerTolerance(pattern, overrides) for pattern, overrides in (layers or {}).items())
    return ModelSpec("m", "x:y", (), tolerance=tolerance or Tolerance(), layer_tolerances=rules)


NAMES = ("a", "b", "c", "(model)")


def run(names: tuple[str, ...] = NAMES, moves: dict[str, float] | None = None, **fps) -> ModelRun:
    """Today's reference: every layer at fp(0), except ``moves`` (drift) and ``fps`` overrides."""
    moves = moves or {}
    layers = [LayerInfo(n, "Linear", fps.get(n.replace("(model)", "output"), fp(moves.get(n, 0.0))))
              for n in names]
    return ModelRun("m", Meta(inputs_digest=DIGEST, weights_digest=DIGEST), "float64", layers)


def runtime(provider: str = "CPUExecutionProvider", errs: dict[str, float] | None = None, device: str = CPU,
            precision: str = "float32", names: tuple[str, ...] = NAMES, **kw) -> ProviderRun:
    """A runtime whose layers have the errors given (default 1e-7), fingerprints at the reference's."""
    errs = errs or {}
    prun = ProviderRun(Target(provider, device, precision), **kw)
    for n in names:
        prun.layers[n] = ProviderLayer(LayerStatus.OK, fp(), errs.get(n, 1e-7))
    return prun


def entry(provider: str = "CPUExecutionProvider", errs: dict[str, float] | None = None, device: str = CPU,
          precision: str = "float32", noise: dict[str, float] | None = None, names: tuple[str, ...] = NAMES,
          **kw) -> Entry:
    errs, noise = errs or {}, noise or {}
    rows = {n: EntryLayer("ok", errs.get(n, 1e-7), fp(), noise.get(n)) for n in names}
    return Entry(Target(provider, device, precision), layers=rows, **kw)


def baseline(*entries: Entry, names: tuple[str, ...] = NAMES, noise: dict[str, float] | None = None,
             dtype: str = "float64", **fps) -> Baseline:
    noise = noise or {}
    layers = tuple(BaselineLayer(n, "Linear", fps.get(n.replace("(model)", "output"), fp()), noise.get(n))
                   for n in names)
    return Baseline("m", Meta(inputs_digest=DIGEST, weights_digest=DIGEST), dtype, layers, entries)
