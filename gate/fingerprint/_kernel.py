"""Thin wrapper around the cffi-built C kernel (``gate.fingerprint._native``).

Kept lean for small tensors: the quantile table and dtype codes are built once; a call
allocates only the result struct. cffi releases the GIL around the C call.
"""

from __future__ import annotations

import os

import numpy as np

from gate.errors import ConfigError

from ._model import QUANTILES, SKETCH_WIDTH, Fingerprint
from ._native import ffi, lib  # ImportError when the extension was not built

_CODES = {"float16": 0, "bfloat16": 1, "float32": 2, "float64": 3}
_QS = ffi.new("double[]", list(QUANTILES))
_NQ = len(QUANTILES)
_SKETCH_AT = ffi.offsetof("pgfp_result", "sketch")
_PARALLEL_MIN = 1 << 21
_new = Fingerprint._new  # below this a thread start costs more than it saves


def _threads() -> int:
    """PARITY_GATE_THREADS (default 1). Any count gives bit-identical results; more threads
    only pay off on idle multi-core machines (the gate usually runs beside torch/ORT)."""
    env = os.environ.get("PARITY_GATE_THREADS", "").strip()
    if not env:
        return 1
    try:
        return max(1, min(64, int(env)))
    except ValueError:
        raise ConfigError(f"PARITY_GATE_THREADS={env!r} is not a positive integer") from None


THREADS = _threads()


def scratch_bound(n: int, dtype: str, threads: int | None = None) -> int:
    """Bytes of scratch memory the kernel allocates at most for n elements."""
    t = THREADS if threads is None else threads
    return int(lib.pgfp_scratch_bound(n, _CODES[dtype], t if n >= _PARALLEL_MIN else 1))


def fingerprint_native(a: np.ndarray, dtype: str, threads: int | None = None) -> Fingerprint:
    """Fingerprint of ``a`` (C-contiguous, native byte order; uint16 bits for bfloat16)."""
    n = a.size
    out = ffi.new("pgfp_result *")
    t = (THREADS if threads is None else threads) if n >= _PARALLEL_MIN else 1
    rc = lib.pgfp_fingerprint(ffi.from_buffer(a) if n else ffi.NULL, n, _CODES[dtype], _QS, _NQ, t, out)
    if rc:
        raise MemoryError("fingerprint: native kernel could not allocate its scratch memory")
    return _new(
        {
            "shape": a.shape,
            "dtype": dtype,
            "count": n,
            "nan": out.nan,
            "posinf": out.posinf,
            "neginf": out.neginf,
            "zero": out.zero,
            "min": out.min,
            "max": out.max,
            "sum": out.sum,
            "sumsq": out.sumsq,
            "sumabs": out.sumabs,
            "quantiles": tuple(ffi.unpack(out.q, _NQ)),
            # a view into the result struct; ffi.buffer(out) keeps the struct alive
            "sketch": np.frombuffer(ffi.buffer(out), np.float64, SKETCH_WIDTH, _SKETCH_AT),
        }
    )
