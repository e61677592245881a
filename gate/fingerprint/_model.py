"""The Fingerprint value type, its on-disk dict form, and the sketch distance (one, or one to many).

Nothing here depends on the backend: both backends build the same ``Fingerprint``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from gate.errors import FormatError

QUANTILES: tuple[float, ...] = (0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999)
SKETCH_WIDTH = 256
SKETCH_SEED = 0x2545F491
LANES = 8
BLOCK = 1 << 16

DTYPES = ("float16", "bfloat16", "float32", "float64")


def parameters() -> dict[str, Any]:
    """What fixes the fingerprint's definition, recorded with every baseline: fingerprints taken
    with other parameters cannot be compared."""
    return {"sketch_width": SKETCH_WIDTH, "sketch_seed": SKETCH_SEED, "quantiles": list(QUANTILES)}


# The statistics of a fingerprint, in the order the dataclass, the file formats and ``show`` list them:
# each name is the attribute and the key on disk, and its kind says what it holds and how it scales.
# "count": a non-negative int; "value": a float64 in the tensor's units, NaN when no value is finite;
# "total": a float64 sum of values (never NaN); "square": a float64 sum of squared values (never NaN).
# A fingerprint on disk is {shape, dtype, *STATS, q, sketch}; only the reference's carry the sketch.
STATS: dict[str, str] = {
    "count": "count", "nan": "count", "posinf": "count", "neginf": "count", "zero": "count",
    "min": "value", "max": "value", "sum": "total", "sumsq": "square", "sumabs": "total",
}
COUNTS = tuple(k for k, kind in STATS.items() if kind == "count")
FLOATS = tuple(k for k, kind in STATS.items() if kind != "count")
# The statistics of a tensor with no elements (a kernel computes the others).
EMPTY: dict[str, Any] = {k: 0 if kind == "count" else math.nan if kind == "value" else 0.0
                         for k, kind in STATS.items()}


@dataclass(frozen=True, eq=False)
class Fingerprint:
    """Summary of one tensor; see :mod:`gate.fingerprint.reference` for the definition."""

    shape: tuple[int, ...]
    dtype: str
    count: int
    nan: int
    posinf: int
    neginf: int
    zero: int
    min: float
    max: float
    sum: float
    sumsq: float
    sumabs: float
    quantiles: tuple[float, ...]
    sketch: np.ndarray | None = None

    @property
    def finite(self) -> int:
        return self.count - self.nan - self.posinf - self.neginf

    @property
    def mean(self) -> float:
        return self.sum / self.finite if self.finite else math.nan

    @property
    def meanabs(self) -> float:
        return self.sumabs / self.finite if self.finite else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation from the moments (sum, sumsq) of the finite values."""
        if not self.finite:
            return math.nan
        mean = self.sum / self.finite
        return math.sqrt(max(self.sumsq / self.finite - mean * mean, 0.0))

    @property
    def l2(self) -> float:
        return math.sqrt(self.sumsq)

    def to_dict(self, sketch: bool = True) -> dict[str, Any]:
        """The on-disk form (msgpack-ready). ``sketch=False`` leaves the sketch out."""
        d: dict[str, Any] = {"shape": list(self.shape), "dtype": self.dtype}
        for k, kind in STATS.items():
            d[k] = int(getattr(self, k)) if kind == "count" else float(getattr(self, k))
        d["q"] = [float(v) for v in self.quantiles]
        if sketch and self.sketch is not None:
            d["sketch"] = np.asarray(self.sketch, dtype="<f8").tobytes()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Fingerprint:
        """Rebuild from :meth:`to_dict` output; raises FormatError naming the bad key."""
        if not isinstance(d, Mapping):
            raise FormatError(f"fingerprint: expected a map, got {type(d).__name__}")
        shape = d.get("shape")
        if not isinstance(shape, list | tuple) or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
            raise FormatError("fingerprint: key 'shape' must be a list of non-negative ints")
        dtype = d.get("dtype")
        if dtype not in DTYPES:
            raise FormatError(f"fingerprint: key 'dtype' must be one of {', '.join(DTYPES)}, got {dtype!r}")
        stats: dict[str, Any] = {}
        for k in COUNTS:
            v = d.get(k)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise FormatError(f"fingerprint: key {k!r} must be a non-negative int, got {v!r}")
            stats[k] = v
        if stats["count"] != math.prod(shape):
            raise FormatError(f"fingerprint: 'count' {stats['count']} does not match shape {list(shape)}")
        if stats["nan"] + stats["posinf"] + stats["neginf"] > stats["count"]:
            raise FormatError("fingerprint: nan+posinf+neginf exceeds 'count'")
        for k in FLOATS:
            v = d.get(k)
            if not isinstance(v, float | int) or isinstance(v, bool):
                raise FormatError(f"fingerprint: key {k!r} must be a float, got {v!r}")
            stats[k] = float(v)
        q = d.get("q")
        if (not isinstance(q, list | tuple) or len(q) != len(QUANTILES)
                or not all(isinstance(v, float | int) and not isinstance(v, bool) for v in q)):
            raise FormatError(f"fingerprint: key 'q' must be a list of {len(QUANTILES)} floats")
        raw = d.get("sketch")
        if raw is not None and (not isinstance(raw, bytes | bytearray) or len(raw) != SKETCH_WIDTH * 8):
            raise FormatError(f"fingerprint: key 'sketch' must be {SKETCH_WIDTH * 8} bytes")
        q = [float(v) for v in q]
        return cls.from_valid({"shape": shape, "dtype": dtype, **stats, "q": q, "sketch": raw})

    @classmethod
    def from_valid(cls, d: Mapping[str, Any]) -> Fingerprint:
        """Build from the dict form whose keys a schema has already checked (against the file's own
        parameters, which may differ from today's: ``from_dict`` demands today's)."""
        raw = d.get("sketch")
        sketch = None if raw is None else np.frombuffer(bytes(raw), dtype="<f8").astype(np.float64)
        return cls(shape=tuple(d["shape"]), dtype=d["dtype"], quantiles=tuple(d["q"]), sketch=sketch,
                   **{k: d[k] for k in STATS})

    def __eq__(self, other: object) -> bool:
        """Bit-identical comparison (NaN equals NaN); the sketch counts when both have one."""
        if not isinstance(other, Fingerprint):
            return NotImplemented
        both = self.sketch is not None and other.sketch is not None
        return _bits(self.to_dict(sketch=both)) == _bits(other.to_dict(sketch=both))

    __hash__ = None  # type: ignore[assignment]


if [f.name for f in fields(Fingerprint)] != ["shape", "dtype", *STATS, "quantiles", "sketch"]:
    raise TypeError("Fingerprint's fields differ from STATS")


def _bits(d: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        if isinstance(v, float):
            out[k] = struct.pack("<d", v)
        elif isinstance(v, list) and v and isinstance(v[0], float):
            out[k] = [struct.pack("<d", x) for x in v]
        else:
            out[k] = v
    return out


def sketch_distance(a: Fingerprint, b: Fingerprint) -> float:
    """Estimate ||x_a - x_b||_2 from two sketches of equal-shaped tensors; ``math.fsum`` rounds the
    sum correctly, so the value is the same on every platform (accuracy: the reference module)."""
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"sketch_distance: shapes differ: {list(a.shape)} vs {list(b.shape)}")
    if a.sketch is None or b.sketch is None:
        raise ValueError("sketch_distance: a fingerprint has no sketch")
    d = np.asarray(a.sketch, dtype=np.float64) - np.asarray(b.sketch, dtype=np.float64)
    return math.sqrt(math.fsum((d * d).tolist()))


@dataclass(frozen=True)
class Difference:
    """How far a tensor is from its reference: the relative L2 error, or against an all-zero reference
    (where 0/0 is undefined) the RMS of the difference (``absolute``), judged against the same limit."""

    value: float
    absolute: bool = False


def difference(x: Fingerprint, ref: Fingerprint) -> Difference:
    """Estimated ``||x - ref||_2 / ||ref||_2``; ``||x - ref||_2 / sqrt(n)`` (absolute) where ``ref`` is all
    zeros: 0 when both are. NaN where a float64 sum overflowed so that no distance can be told (a bucket at
    inf on both sides, or ``ref``'s sum of squares, which would divide any distance down to 0)."""
    dist = sketch_distance(x, ref)
    if not math.isfinite(ref.l2):
        return Difference(math.nan)
    if ref.l2 > 0.0:
        return Difference(dist / ref.l2 if dist else 0.0)
    return Difference(dist / math.sqrt(max(ref.count, 1)) if dist else 0.0, absolute=True)


SUM_SLACK = 1e-9  # relative: NumPy's sum of SKETCH_WIDTH squares against math.fsum's, with room to spare


class Sketches:
    """The sketches of many equal-shaped references, stacked once: a tensor's ``difference`` to each of
    them in one NumPy pass, each within ``SUM_SLACK`` (relative) of the exact value (NumPy's sum is not
    correctly rounded), for a search that decides exactly only near its limit (``within``)."""

    def __init__(self, refs: Sequence[Fingerprint]):
        rows = [r.sketch for r in refs if r.sketch is not None]
        self._stack = np.array(rows, dtype=np.float64).reshape(len(rows), SKETCH_WIDTH)
        self._index = [i for i, r in enumerate(refs) if r.sketch is not None]
        self._scale = np.array([r.l2 if r.l2 > 0.0 else math.sqrt(max(r.count, 1)) for r in refs],
                               dtype=np.float64)
        self._scale[~np.isfinite(self._scale)] = np.nan  # difference() cannot be computed: NaN

    def differences(self, x: Fingerprint) -> np.ndarray:
        """Per reference, ``difference(x, ref).value`` within ``SUM_SLACK``; NaN where one has no sketch."""
        out = np.full(len(self._scale), np.nan)
        if x.sketch is not None and self._index:
            with np.errstate(over="ignore", invalid="ignore"):  # an overflowed bucket: inf or NaN
                d = self._stack - np.asarray(x.sketch, dtype=np.float64)
                out[self._index] = np.sqrt(np.einsum("ij,ij->i", d, d)) / self._scale[self._index]
        return out


def within(near: float, limit: float, exact: Callable[[], float]) -> bool:
    """Whether the exact difference is at most ``limit``, given ``near`` (``Sketches``) within
    ``SUM_SLACK`` of it: the exact one is computed only where ``near`` cannot tell."""
    if near != near:  # NaN: no sketch
        return False
    if near <= limit * (1 - SUM_SLACK):
        return True
    if near > limit * (1 + SUM_SLACK):
        return False
    return exact() <= limit


def relative_error(x: Fingerprint, ref: Fingerprint) -> float:
    """``difference(x, ref).value``: relative, or absolute against an all-zero reference."""
    return difference(x, ref).value
