"""Thin wrapper around the cffi-built C kernel (``gate.fingerprint._native``), lean for small tensors:
tables and struct offsets are built once, and a call allocates only the result. cffi releases the GIL
around the C call."""

from __future__ import annotations

import struct

import numpy as np

from gate import env

from ._model import QUANTILES, SKETCH_WIDTH, STATS, Fingerprint
from ._native import ffi, lib  # ImportError when the extension was not built

_CODES = {"float16": lib.PGFP_F16, "bfloat16": lib.PGFP_BF16, "float32": lib.PGFP_F32, "float64": lib.PGFP_F64}
_QS = ffi.new("double[]", list(QUANTILES))
_NQ = len(QUANTILES)
_PARALLEL_MIN = 1 << 20  # below ~2^19 elements starting threads costs more than they save
_RES_DOUBLES = ffi.sizeof("pgfp_result") // 8
_S0 = ffi.offsetof("pgfp_result", "sketch") // 8
# The struct holds the counts but "count" (which is n), then the float statistics, in the order of STATS,
# then q[0:_NQ]: one unpack reads them all.
_COUNTED = tuple(k for k, kind in STATS.items() if kind == "count" and k != "count")
_NAMES = (*_COUNTED, *(k for k, kind in STATS.items() if kind != "count"))
_AT = {name: f.offset // 8 for name, f in ffi.typeof("pgfp_result").fields}  # a field -> its place in res
_HEAD = _AT.get(_NAMES[0], 0)
_read = struct.Struct(f"={len(_COUNTED)}Q{len(_NAMES) - len(_COUNTED) + _NQ}d").unpack_from
_SKETCH = slice(_S0, _S0 + SKETCH_WIDTH)
if ([_AT.get(k) for k in (*_NAMES, "q")] != list(range(_HEAD, _HEAD + len(_NAMES) + 1))
        or ffi.sizeof("pgfp_result") % 8 or lib.PGFP_WIDTH != SKETCH_WIDTH or lib.PGFP_NQ_MAX < _NQ):
    raise ImportError("pgfp_result differs from what gate/fingerprint/_kernel.py reads")
_empty, _from_buffer, _obj_new = np.empty, ffi.from_buffer, object.__new__

VECTOR_PATH: str = ffi.string(lib.pgfp_path()).decode()  # "avx2", "neon" or "portable" on this CPU


def _threads() -> int:
    """PARITY_GATE_THREADS (at most 64), else the usable CPUs (at most 8): the gate fingerprints while
    torch and ONNX Runtime wait, and any count gives bit-identical results."""
    pinned = env.threads()
    return max(1, min(8, env.usable_cpus())) if pinned is None else min(64, pinned)


THREADS = _threads()


def scratch_bound(n: int, dtype: str, threads: int | None = None) -> int:
    """Bytes of scratch memory the kernel allocates at most for n elements."""
    t = THREADS if threads is None else threads
    return int(lib.pgfp_scratch_bound(n, _CODES[dtype], t if n >= _PARALLEL_MIN else 1))


def fingerprint_native(a: np.ndarray, dtype: str, threads: int | None = None) -> Fingerprint:
    """Fingerprint of ``a`` (C-contiguous, native byte order; uint16 bits for bfloat16)."""
    n = a.size
    # The result struct lives in a float64 array: its numbers come out with one unpack and
    # the sketch is a view, which costs less per call than reading cffi fields one by one.
    res = _empty(_RES_DOUBLES)
    out = _from_buffer("pgfp_result *", res, True)
    t = (THREADS if threads is None else threads) if n >= _PARALLEL_MIN else 1
    if lib.pgfp_fingerprint(_from_buffer(a) if n else ffi.NULL, n, _CODES[dtype], _QS, _NQ, t, out):
        raise MemoryError("fingerprint: native kernel could not allocate its scratch memory")
    v = _read(res.data, _HEAD * 8)  # the statistics of _NAMES, then the quantiles
    fp = _obj_new(Fingerprint)
    fp.__dict__.update(zip(_NAMES, v), shape=a.shape, dtype=dtype, count=n,  # noqa: B905 (v goes on with q)
                       quantiles=v[len(_NAMES):], sketch=res[_SKETCH])
    return fp
