"""Deterministic model inputs, generated with NumPy from (seed, input index) so any runner, with or
without torch, rebuilds the same bytes; ``digest`` fixes them in the baseline."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from gate.config.input_ranges import INT_DEFAULT
from gate.config.types import InputSpec

_NUMPY = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int64": np.int64,
          "int32": np.int32, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}


def nbytes(spec: InputSpec) -> int:
    """Bytes of the array ``generate`` gives for ``spec``, known before it is drawn."""
    return math.prod(spec.shape) * np.dtype(_NUMPY.get(spec.dtype, np.float32)).itemsize  # bfloat16: float32


def generate(specs: tuple[InputSpec, ...], seed: int) -> list[np.ndarray]:
    """One array per spec: floats ~ N(0, 1) (or U[low, high)), integers ~ U{low..high-1} (default 0..99;
    bool: 0..1)."""
    arrays = []
    for index, spec in enumerate(specs):
        rng = np.random.default_rng([seed, index])
        if spec.dtype in ("float32", "float64", "float16", "bfloat16"):
            if spec.low is not None or spec.high is not None:
                low = 0.0 if spec.low is None else spec.low
                high = low + 1.0 if spec.high is None else spec.high
                values = rng.uniform(low, high, size=spec.shape)
            else:
                values = rng.standard_normal(size=spec.shape)
            # bfloat16 inputs are generated as float32 and cast by the torch side.
            arrays.append(values.astype(np.float32 if spec.dtype == "bfloat16" else _NUMPY[spec.dtype]))
        else:  # bool: 0 and 1 unless a range narrows them
            low, high = (0, 2) if spec.dtype == "bool" else INT_DEFAULT
            low = low if spec.low is None else int(spec.low)
            high = high if spec.high is None else int(spec.high)
            arrays.append(rng.integers(low, high, size=spec.shape).astype(_NUMPY[spec.dtype]))
    return arrays


def digest(names: list[str], arrays: list[np.ndarray]) -> str:
    """sha256 over names, dtypes, shapes and bytes of the inputs."""
    h = hashlib.sha256()
    for name, array in zip(names, arrays, strict=True):
        a = np.ascontiguousarray(array)
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def describe(names: list[str], arrays: list[np.ndarray], dtypes: list[str] | None = None
             ) -> list[dict[str, Any]]:
    """What the baseline records of each input: name, dtype (``dtypes`` where the arrays widen it,
    bfloat16), shape and a short digest of its bytes, so a refusal can say which input changed and how."""
    out = []
    for i, (name, array) in enumerate(zip(names, arrays, strict=True)):
        digest_of = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]
        out.append({"name": name, "dtype": dtypes[i] if dtypes else str(array.dtype), "shape": list(array.shape),
                    "digest": digest_of})
    return out


def _cause(source: str | tuple[Any, ...]) -> str:
    if isinstance(source, str):
        return "its file changed" if source.endswith(".npz") else (
            f"its inputs function `{source}` gives others; it runs with torch's generator at the seed")
    return "its seed or range changed" if source else "its seed, range, file or inputs function changed"


def _listed(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def difference(recorded: list[dict[str, Any]] | None, now: list[dict[str, Any]],
               source: str | tuple[Any, ...] = ()) -> str | None:
    """How the inputs ``now`` differ from those a baseline ``recorded``, in one phrase (None: it
    recorded none, or they are the same); ``source``: the model's ``inputs`` (what other values point at)."""
    if not recorded:
        return None
    before, after = {x["name"]: x for x in recorded}, {x["name"]: x for x in now}
    was, order = [x["name"] for x in recorded], [x["name"] for x in now]
    reordered = sorted(was) == sorted(order) and was != order
    changes = [f"the inputs are in another order, {_listed(order)} where the baseline has {_listed(was)}"] \
        if reordered else []
    changes += [f"input `{n}` is new" for n in after if n not in before]
    changes += [f"input `{n}` is gone" for n in before if n not in after]
    for name in (n for n in after if n in before):
        b, a = before[name], after[name]
        if b["dtype"] != a["dtype"]:
            changes.append(f"input `{name}`: dtype {b['dtype']} -> {a['dtype']}")
        elif list(b["shape"]) != list(a["shape"]):
            changes.append(f"input `{name}`: shape {list(b['shape'])} -> {list(a['shape'])}")
        elif b["digest"] != a["digest"] and not reordered:  # declared inputs draw their values in order
            changes.append(f"input `{name}`: other values, same dtype and shape ({_cause(source)})")
    return "; ".join(changes) or None

