"""NumPy reference implementation: THE SPECIFICATION of the fingerprint.

The native kernel must produce bit-identical results; where this docstring and the C
code disagree, this docstring wins.

Input. A float16, bfloat16, float32 or float64 tensor ``x`` with ``n`` elements, read in
flat C order (index ``i`` = position in ``x.reshape(-1)`` of the *logical* tensor, whatever
its strides). Every element is converted exactly to float64 (``v_i``); -0.0 becomes +0.0.
bfloat16 is the upper half of a float32, so it converts exactly too.

Counts. ``nan``, ``posinf``, ``neginf``, ``zero`` (``v_i == 0``) count elements; the
others ("finite") are ``count - nan - posinf - neginf``. The largest finite magnitude of
``x``'s own dtype (``finfo(dtype).max``, a mask's sentinel) counts as Inf: ``posinf`` counts
``v_i >= max``, ``neginf`` ``v_i <= -max``, so a float64 reference masked with -DBL_MAX and a
float32 runtime masked with -FLT_MAX agree. Only finite values enter min, max, the sums, the
quantiles and the sketch; NaN and +/-Inf are only counted.

min / max. Over finite values; NaN when there is none. Zero is reported as +0.0.

Sums (``sum``, ``sumsq`` = sum of ``v*v``, ``sumabs`` = sum of ``|v|``), float64, in a
fixed order so that any implementation can reproduce them bit for bit:
  1. the flat tensor is cut into blocks of BLOCK = 65536 elements (the last may be short);
  2. inside a block, element at offset ``o`` belongs to lane ``o % 8``; each of the 8
     lanes is summed sequentially in index order starting from +0.0 (non-finite
     elements contribute +0.0, which changes nothing);
  3. the 8 block lane sums are added lane-wise, sequentially in block order, to running
     totals starting from +0.0;
  4. the 8 totals are combined as ((t0+t1)+(t2+t3)) + ((t4+t5)+(t6+t7)).
``v*v`` is rounded to float64 before it is added (no fused multiply-add); it is exact
for inputs narrower than float64. Plain IEEE arithmetic throughout: float64 inputs near
the top of the range can overflow a sum to +/-inf (and +inf + -inf to NaN) — the same
on both backends. The blocks make the order independent of how an
implementation chunks or parallelises its work.

Quantiles. For each q in QUANTILES: the order statistic of rank ``floor(q * (m - 1))``
(0-based, ``q * (m - 1)`` evaluated in float64) of the ``m`` finite values sorted
ascending (numerical order; -0.0 == +0.0); NaN when m == 0. An exact element of the
input, never an interpolation.

Sketch. A CountSketch of SKETCH_WIDTH = 256 float64 buckets, seen as 32 rows of 8.
Elements are hashed in aligned groups of 8 (group ``g = i >> 3``, position ``j = i & 7``);
with (uint32 arithmetic, wrapping)::

    mix(x) = x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16
    h      = mix(lo32(g) ^ mix(hi32(g) ^ SKETCH_SEED))
    bucket = 8 * (h >> 27) + (j ^ ((h >> 24) & 7))
    sign   = -1 if (h >> (16 + j)) & 1 else +1

so a group lands in one hash-chosen row, its 8 elements in 8 distinct buckets permuted
by a hash-chosen XOR, each with its own hash bit as sign. Two elements of different groups
share a bucket with probability 1/256, as in a plain CountSketch, whatever the stride
between them; elements of one group never collide. (The grouping lets the C kernel add a
group with one 8-wide vector add instead of 8 dependent scatters.) ``mix`` is a
bijective 32-bit finalizer (C. Wellons' "lowbias32"): consecutive, strided and
channel-shaped index sets all spread uniformly. Each bucket accumulates ``sign * v_i`` of
its finite elements in index order; as for the sums, each block builds its own 256
buckets from +0.0 and the block sketches are added, bucket-wise, in block order, to the
total starting from +0.0.

The sketch is linear: sketch(a) - sketch(b) = sketch(a - b) up to rounding, and
``sketch_distance`` = sqrt(sum of squared bucket differences) estimates ||a - b||_2
without bias in the square (E ||S d||^2 = ||d||^2). For a difference spread over many
elements the relative standard deviation of the estimate is about 1/sqrt(2 * 256) = 4.4%
(so +/-25% is a ~5.6 sigma event). For a difference confined to k elements, the estimate is
exact unless two of them share a bucket (probability about k(k-1)/512); a collision
merges their contributions with random signs, so the estimate of a 2-element difference
can then be off by up to a factor sqrt(2). Many equal-magnitude entries (a whole
channel, a strided pattern) behave like the dense case. The sketch is position-sensitive:
a permuted or transposed tensor has the same moments and quantiles but a distance
comparable to sqrt(2) * ||a||.

Dtype promotion. float16 / bfloat16 / float32 / float64 in, float64 out; everything else
(bool, ints, complex, long double) is rejected with TypeError.
"""

from __future__ import annotations

import math

import numpy as np

from ._model import BLOCK, LANES, QUANTILES, SKETCH_SEED, SKETCH_WIDTH, Fingerprint

_CHUNK = 16 * BLOCK  # elements converted at a time; a multiple of BLOCK (bounds memory)
# finfo(dtype).max: at or beyond it a value counts as Inf (bfloat16's: its bits 0x7f7f, widened)
_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": float(np.finfo(np.float32).max),
        "float64": float(np.finfo(np.float64).max)}
_M1 = np.uint32(0x7FEB352D)
_M2 = np.uint32(0x846CA68B)


def mix32(x: np.ndarray) -> np.ndarray:
    """lowbias32 on a uint32 array (wrapping arithmetic)."""
    x = x ^ (x >> np.uint32(16))
    x = x * _M1
    x = x ^ (x >> np.uint32(15))
    x = x * _M2
    return x ^ (x >> np.uint32(16))


def group_hash(g0: int, g1: int) -> np.ndarray:
    """h for groups g0..g1-1 (uint32 array)."""
    g = np.arange(g0, g1, dtype=np.uint64)
    lo = g.astype(np.uint32)
    hi = (g >> np.uint64(32)).astype(np.uint32)
    with np.errstate(over="ignore"):
        return mix32(lo ^ mix32(hi ^ np.uint32(SKETCH_SEED)))


def sketch_map(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """(bucket, negative) for flat indices start..stop-1; start is a multiple of 8."""
    h = np.repeat(group_hash(start >> 3, (stop + 7) >> 3), 8)[: stop - start]
    j = np.tile(np.arange(8, dtype=np.uint32), (stop - start + 7) // 8)[: stop - start]
    bucket = (h >> np.uint32(27)) * np.uint32(8) + (j ^ ((h >> np.uint32(24)) & np.uint32(7)))
    bucket = bucket.astype(np.intp)
    negative = ((h >> (np.uint32(16) + j)) & np.uint32(1)).astype(bool)
    return bucket, negative


def _values(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Numeric values in a NumPy float dtype (bfloat16 bits widen exactly to float32)."""
    if dtype == "bfloat16":
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return raw


def combine_lanes(t: np.ndarray) -> float:
    """The fixed combination ((t0+t1)+(t2+t3)) + ((t4+t5)+(t6+t7)), in float64."""
    t = [float(x) for x in t]
    return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]))


def _lane_sums(v: np.ndarray) -> np.ndarray:
    """Per-lane sequential sums of one block (v: float64, len a multiple of LANES).

    ``reshape(-1, 8).sum(axis=0)`` adds row after row into the 8 outputs (NumPy only
    uses pairwise summation along a contiguous reduced axis); a unit test checks this
    against an explicit sequential loop.
    """
    return v.reshape(-1, LANES).sum(axis=0)


def fingerprint_numpy(a: np.ndarray, dtype: str) -> Fingerprint:
    """Fingerprint of ``a`` (C-contiguous, native byte order; uint16 bits for bfloat16)."""
    flat = a.reshape(-1)
    n = flat.size
    with np.errstate(over="ignore", invalid="ignore"):  # huge values overflow to inf, as in C
        return _fingerprint(a, flat, n, dtype)


def _order_statistics(finite_parts: list[np.ndarray], m: int, vmin: float, vmax: float):
    """(quantiles, min, max) of the m finite values: exact order statistics; NaN when m == 0."""
    if not m:
        return (math.nan,) * len(QUANTILES), math.nan, math.nan
    vals = np.concatenate(finite_parts) if len(finite_parts) > 1 else finite_parts[0]
    ranks = [int(math.floor(q * float(m - 1))) for q in QUANTILES]
    part = np.partition(vals, sorted(set(ranks)))
    return tuple(float(part[r]) + 0.0 for r in ranks), vmin + 0.0, vmax + 0.0


def _fingerprint(a: np.ndarray, flat: np.ndarray, n: int, dtype: str) -> Fingerprint:
    nan = posinf = neginf = zero = 0
    vmin, vmax = math.inf, -math.inf
    tot = {name: np.zeros(LANES) for name in ("sum", "sumsq", "sumabs")}
    sketch = np.zeros(SKETCH_WIDTH)
    finite_parts = []
    big = _MAX[dtype]
    for c0 in range(0, n, _CHUNK):
        vals = _values(flat[c0 : c0 + _CHUNK], dtype)
        x = vals.astype(np.float64)
        isnan = np.isnan(x)
        ispos = x >= big
        isneg = x <= -big
        nan += int(isnan.sum())
        posinf += int(ispos.sum())
        neginf += int(isneg.sum())
        zero += int((x == 0.0).sum())
        fin = ~(isnan | ispos | isneg)
        v = np.where(fin, x, 0.0) + 0.0  # non-finite -> +0.0; -0.0 -> +0.0
        if fin.any():
            vf = v[fin]
            vmin = min(vmin, float(vf.min()))
            vmax = max(vmax, float(vf.max()))
            finite_parts.append(vals[fin])
        bucket, negative = sketch_map(c0, c0 + x.size)
        signed = np.where(negative, -v, v)
        sq = v * v
        ab = np.abs(v)
        for b0 in range(0, x.size, BLOCK):
            b1 = min(b0 + BLOCK, x.size)
            pad = (-(b1 - b0)) % LANES
            for name, arr in (("sum", v), ("sumsq", sq), ("sumabs", ab)):
                blk = arr[b0:b1]
                if pad:
                    blk = np.concatenate([blk, np.zeros(pad)])
                tot[name] += _lane_sums(blk)
            # np.bincount adds the weights in index order into buckets starting at 0.0.
            sketch += np.bincount(bucket[b0:b1], weights=signed[b0:b1], minlength=SKETCH_WIDTH)
    qs, vmin, vmax = _order_statistics(finite_parts, n - nan - posinf - neginf, vmin, vmax)
    return Fingerprint(
        shape=tuple(int(s) for s in a.shape), dtype=dtype, count=int(n), nan=nan, posinf=posinf,
        neginf=neginf, zero=zero, min=vmin, max=vmax, sum=combine_lanes(tot["sum"]),
        sumsq=combine_lanes(tot["sumsq"]), sumabs=combine_lanes(tot["sumabs"]), quantiles=qs, sketch=sketch,
    )
