"""The fingerprint computed with torch ops on the tensor's own device.

A CUDA activation is fingerprinted where it lives and only the fingerprint crosses to the host; on
CPU tensors the same code is tested against the specification (:mod:`.reference`). Anything with
``__dlpack__`` (an ONNX Runtime ``OrtValue`` on the GPU) is taken through ``torch.from_dlpack``, no copy.

Agreement with the specification:

- the counts, ``min``, ``max`` and the quantiles are exact (the same ranks, read from a sort in which
  -Inf and -max come first and +max, +Inf and NaN last: +-max counts as +-Inf);
- ``sum``, ``sumsq``, ``sumabs`` and each sketch bucket are float64 sums of the same terms (``v*v``
  rounded, never fused) in another order (torch's reductions, CUDA atomics). Any order of n - 1
  float64 additions is within ``gamma(n - 1) * sum(|terms|)`` of the exact sum (``gamma(k) = k*u /
  (1 - k*u)``, ``u = 2**-53``), so the two differ by at most twice that (``error_bound``): 2.2e-8
  relative for ``sumsq`` and ``sumabs`` at n = 1e8. Where every partial sum is exact the results are
  bit-identical; a sum that overflows can end as inf in one order and NaN in another;
- the sketch uses the same hash, buckets and signs (uint32 arithmetic emulated in int64).

Transient device memory: the sort (``itemsize + 8`` bytes per element) and about 40 bytes per
element of one ``CHUNK``."""

from __future__ import annotations

import math

import numpy as np
import torch

from ._model import EMPTY, QUANTILES, SKETCH_SEED, SKETCH_WIDTH, Fingerprint

CHUNK = 1 << 22  # elements widened to float64 at a time (a multiple of 8: whole hash groups)
_MASK = 0xFFFFFFFF
_M1, _M2 = 0x7FEB352D, 0x846CA68B
_U = 2.0**-53
_DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32",
           torch.float64: "float64"}


def as_tensor(x) -> torch.Tensor:
    """``x`` as a tensor on its own device: a tensor as is, anything with ``__dlpack__`` shared."""
    if isinstance(x, torch.Tensor):
        return x
    if hasattr(x, "__dlpack__"):
        return torch.from_dlpack(x)
    raise TypeError(f"fingerprint_tensor: expected a torch.Tensor or an object with __dlpack__, got {type(x).__name__}")


def error_bound(n: int, magnitude: float) -> float:
    """Most a float64 sum of n terms whose magnitudes add to ``magnitude`` can differ between
    two summation orders (each within gamma(n - 1) * magnitude of the exact sum)."""
    k = max(n - 1, 0) * _U
    return 2.0 * k / (1.0 - k) * magnitude


def _mul32(x: torch.Tensor, m: int) -> torch.Tensor:
    """(x * m) mod 2**32 for int64 x in [0, 2**32): split m in 16-bit halves so nothing overflows int64."""
    return (x * (m & 0xFFFF) + (((x * (m >> 16)) & 0xFFFF) << 16)) & _MASK


def _mix32(x: torch.Tensor) -> torch.Tensor:
    x = x ^ (x >> 16)
    x = _mul32(x, _M1)
    x = x ^ (x >> 15)
    x = _mul32(x, _M2)
    return x ^ (x >> 16)


def group_hash(g0: int, g1: int, device: torch.device) -> torch.Tensor:
    """The specification's h for groups g0..g1-1, as int64 values in [0, 2**32)."""
    g = torch.arange(g0, g1, dtype=torch.int64, device=device)
    return _mix32((g & _MASK) ^ _mix32((g >> 32) ^ SKETCH_SEED))


def _sketch_add(sketch: torch.Tensor, v: torch.Tensor, c0: int) -> None:
    """Add the chunk ``v`` (float64, starting at flat index c0, a multiple of 8) into ``sketch``."""
    pad = (-v.numel()) % 8
    rows = torch.nn.functional.pad(v, (0, pad)).view(-1, 8)  # padding adds +0.0: changes nothing
    h = group_hash(c0 >> 3, (c0 >> 3) + rows.shape[0], v.device).unsqueeze(1)
    j = torch.arange(8, dtype=torch.int64, device=v.device)
    bucket = (h >> 27) * 8 + (j ^ ((h >> 24) & 7))
    negative = ((h >> (16 + j)) & 1).bool()
    sketch.index_add_(0, bucket.reshape(-1), torch.where(negative, -rows, rows).reshape(-1))


def _order_statistics(flat: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """min, max and the quantiles (NaN when nothing is finite) from one sort, whose finite values are
    the slice [neginf, n - nan - posinf); ranks are computed on the device, so nothing synchronises."""
    n = flat.numel()
    nan, posinf, neginf = counts[0], counts[1], counts[2]
    m = n - nan - posinf - neginf
    ordered = torch.sort(flat).values
    q = torch.tensor(QUANTILES, dtype=torch.float64, device=flat.device)
    last = (m - 1).clamp(min=0)
    ranks = torch.floor(q * last.to(torch.float64)).to(torch.int64)  # q * (m - 1) in float64, as specified
    idx = torch.cat([torch.zeros(1, dtype=torch.int64, device=flat.device), last.view(1), ranks]) + neginf
    picked = ordered[idx.clamp(max=max(n - 1, 0))].to(torch.float64) + 0.0  # -0.0 -> +0.0
    return torch.where(m > 0, picked, torch.full_like(picked, math.nan))


@torch.no_grad()
def fingerprint_tensor(x) -> Fingerprint:
    """Fingerprint of a floating tensor on its own device; any shape and strides, 0-d and empty."""
    t = as_tensor(x).detach()
    name = _DTYPES.get(t.dtype)
    if name is None:
        raise TypeError(f"fingerprint: {t.dtype} is not a supported floating dtype ({', '.join(_DTYPES.values())})")
    shape, n, dev = tuple(int(s) for s in t.shape), t.numel(), t.device
    if n == 0:
        return Fingerprint(shape=shape, dtype=name, quantiles=(math.nan,) * len(QUANTILES),
                           sketch=np.zeros(SKETCH_WIDTH), **EMPTY)
    flat = t.reshape(-1)  # the logical C order, whatever the strides
    counts = torch.zeros(4, dtype=torch.int64, device=dev)  # nan, posinf, neginf, zero
    sums = torch.zeros(3, dtype=torch.float64, device=dev)  # sum, sumsq, sumabs
    sketch = torch.zeros(SKETCH_WIDTH, dtype=torch.float64, device=dev)
    big = torch.finfo(t.dtype).max  # at or beyond it a value counts as Inf
    for c0 in range(0, n, CHUNK):
        x64 = flat[c0:c0 + CHUNK].to(torch.float64)
        finite = x64.abs() < big
        counts += torch.stack([torch.isnan(x64).sum(), (x64 >= big).sum(), (x64 <= -big).sum(),
                               (x64 == 0).sum()])
        v = torch.where(finite, x64, 0.0)
        del x64, finite
        sums += torch.stack([v.sum(), (v * v).sum(), v.abs().sum()])  # v*v rounded first: no FMA
        _sketch_add(sketch, v, c0)
    floats = torch.cat([_order_statistics(flat, counts), sums, sketch]).cpu().numpy()
    nan, posinf, neginf, zero = counts.tolist()
    return Fingerprint(
        shape=shape, dtype=name, count=n, nan=nan, posinf=posinf, neginf=neginf, zero=zero,
        min=float(floats[0]), max=float(floats[1]),
        sum=float(floats[2 + len(QUANTILES)]), sumsq=float(floats[3 + len(QUANTILES)]),
        sumabs=float(floats[4 + len(QUANTILES)]),
        quantiles=tuple(float(v) for v in floats[2:2 + len(QUANTILES)]),
        sketch=floats[5 + len(QUANTILES):].copy(),
    )
