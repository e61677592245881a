"""Tensor fingerprints: counts, moments, quantiles and a linear position-sensitive sketch.

``fingerprint(array)`` summarises a float16/bfloat16/float32/float64 NumPy array, bit-identically
on two backends: the NumPy reference (:mod:`.reference`, the specification) and a C kernel built with
cffi (``_build``, ``_kernel``); ``backend`` says which, ``PARITY_GATE_BACKEND=native|numpy`` forces
one. ``torch_ops`` computes it on a tensor's own device.
Imports nothing of parity-gate but ``gate.errors`` and ``gate.env``."""

from __future__ import annotations

import sys
import types

import numpy as np

from gate import env
from gate.errors import ConfigError

from ._model import (
    BLOCK,
    DTYPES,
    LANES,
    QUANTILES,
    SKETCH_SEED,
    SKETCH_WIDTH,
    STATS,
    Difference,
    Fingerprint,
    Sketches,
    difference,
    parameters,
    relative_error,
    sketch_distance,
    within,
)
from .reference import fingerprint_numpy

__all__ = [
    "BLOCK", "LANES", "QUANTILES", "SKETCH_SEED", "SKETCH_WIDTH", "STATS", "Difference", "Fingerprint",
    "Sketches", "backend", "difference", "fingerprint", "native_error", "parameters", "relative_error",
    "sketch_distance", "within",
]

BACKENDS = ("native", "numpy")

try:
    from ._kernel import fingerprint_native as _native_impl

    native_error: str | None = None
except ImportError as exc:  # no compiler at install time, or a source tree never built
    _native_impl = None
    native_error = f"native fingerprint kernel unavailable ({exc})"


def _select_backend() -> str:
    want = env.backend()
    if want and want not in BACKENDS:
        raise ConfigError(f"PARITY_GATE_BACKEND={want!r} is not a fingerprint backend; "
                          f"valid: {', '.join(BACKENDS)}")
    if want == "native" and _native_impl is None:
        raise ConfigError(f"PARITY_GATE_BACKEND=native but {native_error}; "
                          "build it with `python gate/fingerprint/_build.py` or reinstall with a C compiler")
    return want or ("native" if _native_impl is not None else "numpy")


backend: str = _select_backend()
_IMPLS = {"numpy": fingerprint_numpy, "native": _native_impl}
_default_impl = _IMPLS[backend]


_FAST = {np.dtype(n): n for n in ("float16", "float32", "float64")}  # native byte order


def _prepare(array, dtype: str | None) -> tuple[np.ndarray, str]:
    """C-contiguous native-endian array plus the dtype name (bfloat16 as uint16 bits)."""
    a = np.asarray(array)
    dt = a.dtype
    if dtype is not None:
        if dtype == "bfloat16" and dt.kind == "u" and dt.itemsize == 2:
            name = "bfloat16"
        elif dtype == dt.name and dtype in DTYPES:
            name = dtype
        else:
            raise ValueError(f"fingerprint: dtype={dtype!r} does not fit an array of {dt}; "
                             "use dtype='bfloat16' with uint16 bits, or leave it out")
    elif dt.kind == "f" and dt.name in DTYPES:
        name = dt.name
    elif dt.name == "bfloat16" and dt.itemsize == 2:  # ml_dtypes.bfloat16 (not imported here)
        name = "bfloat16"
    elif dt.kind in "biuc" or dt.kind == "f":
        raise TypeError(f"fingerprint: {dt} is not a supported floating dtype ({', '.join(DTYPES)})")
    else:
        raise TypeError(f"fingerprint: unsupported dtype {dt}")
    if name == "bfloat16":
        a = a.view(np.uint16) if a.dtype.kind != "u" else a
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a).reshape(a.shape)  # never read strided memory as flat
    return a, name


def fingerprint(array, dtype: str | None = None, *, backend: str | None = None) -> Fingerprint:
    """Fingerprint of a floating NumPy array (any shape and strides, 0-d and empty included).
    ``dtype="bfloat16"`` reads uint16 bits (ml_dtypes.bfloat16 needs no hint); ``backend``: for tests."""
    if dtype is None and backend is None and type(array) is np.ndarray:  # fast path, small tensors
        name = _FAST.get(array.dtype)
        if name is not None and array.flags.c_contiguous:
            return _default_impl(array, name)
    a, name = _prepare(array, dtype)
    if backend is None:
        return _default_impl(a, name)
    if backend not in BACKENDS:
        raise ValueError(f"fingerprint: backend={backend!r}; valid: {', '.join(BACKENDS)}")
    impl = _IMPLS[backend]
    if impl is None:
        raise ConfigError(f"fingerprint backend 'native' requested but {native_error}")
    return impl(a, name)


class _CallableModule(types.ModuleType):
    """Lets ``gate.fingerprint(array)`` work while ``gate.fingerprint.backend`` etc. stay
    module attributes, so gate/__init__.py can re-export the module itself."""

    def __call__(self, array, dtype: str | None = None, *, backend: str | None = None) -> Fingerprint:
        return fingerprint(array, dtype, backend=backend)


sys.modules[__name__].__class__ = _CallableModule
