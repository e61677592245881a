"""cffi out-of-line (API mode) build of the native fingerprint kernel, for setup.py
(``cffi_modules``) and, in a source tree, ``python gate/fingerprint/_build.py`` (builds in place)."""

from __future__ import annotations

import os
import re
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
SOURCES = ("pgfp.c", "pgfp_path.c", "pgfp_plan.c", "pgfp_scalar.c", "pgfp_select.c", "pgfp_avx2.c",
           "pgfp_neon.c", "pgfp_neon_match.c")

def cdef(header: str = os.path.join(SRC, "pgfp.h")) -> str:
    """The cffi declarations from the public header: integer ``#define``s, enums, types, prototypes."""
    with open(header, encoding="utf-8") as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    keep = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if re.fullmatch(r"#\s*define\s+\w+\s+\d+", stripped):  # a constant cffi can use
                keep.append(stripped)
            continue
        keep.append(line)
    return "\n".join(keep)


def _compile_args() -> list[str]:
    if sys.platform == "win32":
        return ["/O2", "/fp:precise"]
    # Portable wheels: no -march=native; the hot loops carry target_clones(avx2, default).
    # No -ffast-math, no FMA contraction: the summation order and rounding are the spec.
    return ["-O3", "-std=gnu99", "-ffp-contract=off", "-fno-fast-math", "-pthread"]


def make_ffi(path=os.path.relpath, name: str = "gate.fingerprint._native", defines=()) -> FFI:
    """The builder; setuptools wants source paths relative to the project root (cwd)."""
    ffi = FFI()
    ffi.cdef(cdef())
    ffi.set_source(
        name, '#include "pgfp.h"', sources=[path(os.path.join(SRC, f)) for f in SOURCES],
        include_dirs=[path(SRC)], define_macros=[(d, "1") for d in defines],
        depends=[path(os.path.join(SRC, f)) for f in ("pgfp.h", "pgfp_internal.h", "pgfp_ctx.h", "pgfp_neon.h")],
        extra_compile_args=_compile_args(), extra_link_args=[] if sys.platform == "win32" else ["-pthread"],
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
