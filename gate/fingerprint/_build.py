"""cffi out-of-line (API mode) build of the native fingerprint kernel.

Used by setup.py (``cffi_modules=["gate/fingerprint/_build.py:ffibuilder"]``) and, for a
source tree, directly: ``python gate/fingerprint/_build.py`` builds
``gate/fingerprint/_native*.so`` in place.
"""

from __future__ import annotations

import os
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
SOURCES = ("pgfp.c", "pgfp_plan.c", "pgfp_scalar.c", "pgfp_select.c", "pgfp_avx2.c")

CDEF = """
#define PGFP_WIDTH 256
#define PGFP_NQ_MAX 16
typedef struct {
    uint64_t nan, posinf, neginf, zero;
    double min, max;
    double sum, sumsq, sumabs;
    double q[16];
    double sketch[256];
} pgfp_result;
int pgfp_fingerprint(const void *data, uint64_t n, int dtype, const double *qs, int nq,
                     int nthreads, pgfp_result *out);
uint64_t pgfp_scratch_bound(uint64_t n, int dtype, int nthreads);
"""


def _compile_args() -> list[str]:
    if sys.platform == "win32":
        return ["/O2", "/fp:precise"]
    # Portable wheels: no -march=native; the hot loops carry target_clones(avx2, default).
    # No -ffast-math, no FMA contraction: the summation order and rounding are the spec.
    return ["-O3", "-std=gnu99", "-ffp-contract=off", "-fno-fast-math", "-pthread"]


def make_ffi(path=os.path.relpath, name: str = "gate.fingerprint._native", defines=()) -> FFI:
    """The builder; setuptools wants source paths relative to the project root (cwd)."""
    ffi = FFI()
    ffi.cdef(CDEF)
    ffi.set_source(
        name,
        '#include "pgfp.h"',
        sources=[path(os.path.join(SRC, f)) for f in SOURCES],
        include_dirs=[path(SRC)],
        depends=[path(os.path.join(SRC, f)) for f in ("pgfp.h", "pgfp_internal.h", "pgfp_ctx.h")],
        define_macros=[(d, "1") for d in defines],
        extra_compile_args=_compile_args(),
        extra_link_args=[] if sys.platform == "win32" else ["-pthread"],
    )
    return ffi


def compile_variant(tmpdir: str, *defines: str):
    """Build and load a variant of the kernel in tmpdir, e.g. ``PGFP_NO_AVX2`` (the portable
    path that CPUs without AVX2 run), for tests and benchmarks. Returns the cffi module."""
    import importlib.util

    name = "_pgfp_" + ("_".join(d.lower() for d in defines) or "default")
    so = make_ffi(os.path.abspath, name, defines).compile(tmpdir=tmpdir)
    spec = importlib.util.spec_from_file_location(name, so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ffibuilder = make_ffi()

if __name__ == "__main__":
    # In-place build for a source checkout: writes gate/fingerprint/_native*.so.
    import shutil

    root = os.path.dirname(os.path.dirname(HERE))
    tmp = os.path.join(root, "build", "cffi-fingerprint")
    so = make_ffi(os.path.abspath).compile(tmpdir=tmp, verbose=bool(os.environ.get("VERBOSE")))
    dest = os.path.join(HERE, os.path.basename(so))
    shutil.copy2(so, dest)
    print(f"built {os.path.relpath(dest, root)}")
