"""Valid baseline documents for tests, built by hand from the contract (no torch, no model)."""

from __future__ import annotations

import hashlib
import random
import struct
from collections.abc import Iterable, Mapping
from typing import Any

from gate.fingerprint import STATS
from gate.formats.baseline.schema import FORMAT, VERSION

DEFAULT_QUANTILES = (0.0, 0.01, 0.25, 0.5, 0.75, 0.99, 1.0)
_RANGES = {"sum": (-1.0, 1.0), "sumsq": (0.5, 1.5)}  # a sum per element; others (0.5, 1.0)


def make_fp(
    shape: tuple[int, ...],
    *,
    n_quantiles: int,
    sketch_width: int | None,
    rng: random.Random,
    dtype: str = "float64",
) -> dict[str, Any]:
    """A self-consistent fingerprint dict (sketch only when ``sketch_width`` is given)."""
    count = 1
    for d in shape:
        count *= d
    values = sorted(rng.uniform(-2.0, 2.0) for _ in range(max(n_quantiles, 2)))
    fp: dict[str, Any] = {"shape": list(shape), "dtype": dtype}
    for k, kind in STATS.items():  # the sums drawn in the order of STATS: same seed, same document
        if kind == "count":
            fp[k] = count if k == "count" else 0
        elif kind == "value":
            fp[k] = {"min": values[0], "max": values[-1]}.get(k, values[len(values) // 2])
        else:
            fp[k] = rng.uniform(*_RANGES.get(k, (0.5, 1.0))) * count
    fp["q"] = values[:n_quantiles]
    if sketch_width is not None:
        fp["sketch"] = struct.pack(f"<{sketch_width}d", *(rng.gauss(0.0, 1.0) for _ in range(sketch_width)))
    return fp


def _entry_layers(names: list[str], folded: set[str], shape: tuple[int, ...], nq: int, rng: random.Random,
                  precision: str) -> dict[str, Any]:
    """One provider entry's layers: "ok" with an error and a fingerprint, or "folded"."""
    return {name: {"status": "folded", "err": None, "fp": None} if name in folded else
            {"status": "ok", "err": rng.uniform(1e-8, 1e-6),
             "fp": make_fp(shape, n_quantiles=nq, sketch_width=None, rng=rng, dtype=precision)}
            for name in names}


def make_document(
    n_layers: int = 3,
    *,
    providers: Iterable[str] | Mapping[str, Mapping[str, str]] = ("CPUExecutionProvider",),
    sketch_width: int = 8,
    quantiles: tuple[float, ...] = DEFAULT_QUANTILES,
    model: str = "tiny",
    seed: int = 0,
    shape: tuple[int, ...] = (2, 3),
    folded: Iterable[str] = (),
) -> dict[str, Any]:
    """A valid baseline document with ``n_layers`` layers named ``layer0``... and "(model)" last.
    ``providers``: names (device class "cpu", precision "float32"), or ``{provider: {device_class:
    precision}}``; every layer "ok" but those in ``folded``. Same arguments, same document."""
    rng = random.Random(seed)
    names = [f"layer{i}" for i in range(n_layers - 1)] + (["(model)"] if n_layers else [])
    nq = len(quantiles)
    layers = [
        {
            "name": name,
            "type": "Sequential" if name == "(model)" else "Linear",
            "fp": make_fp(shape, n_quantiles=nq, sketch_width=sketch_width, rng=rng),
        }
        for name in names
    ]
    if not isinstance(providers, Mapping):
        providers = {p: {"cpu": "float32"} for p in providers}
    prov_doc = {prov: {dev: {"precision": precision,
                             "layers": _entry_layers(names, set(folded), shape, nq, rng, precision)}
                       for dev, precision in classes.items()}
                for prov, classes in providers.items()}

    meta = _meta(model, seed, sketch_width, quantiles)
    return {"format": FORMAT, "version": VERSION, "model": model, "meta": meta,
            "reference": {"device": "cpu", "dtype": "float64"}, "layers": layers, "providers": prov_doc}


def _meta(model: str, seed: int, sketch_width: int, quantiles: tuple[float, ...]) -> dict[str, Any]:
    def digest(what: str) -> str:
        return hashlib.sha256(f"{what}:{model}:{seed}".encode()).hexdigest()

    return {"parity_gate": "0.1.0", "torch": "2.14.1", "onnx": "1.23.0", "onnxruntime": "1.31.1",
            "onnxscript": "0.7.2",
            "exporter": "dynamo", "export_fallback": None, "opset": 18, "inputs_digest": digest("inputs"),
            "weights_digest": digest("weights"), "graph_digest": digest("graph"),
            "machine": {"platform": "linux-x86_64", "cpu": "test-cpu", "python": "3.11.7"},
            "fingerprint": {"sketch_width": sketch_width, "sketch_seed": 0, "quantiles": list(quantiles)}}
