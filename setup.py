"""Build hook: compile the native fingerprint kernel (cffi, out-of-line API mode).

Metadata lives in pyproject.toml. A C compiler is needed for the native backend; without
one the install still succeeds with a one-line notice and gate.fingerprint uses the
NumPy backend (markupsafe's pattern). PARITY_GATE_REQUIRE_NATIVE=1 makes a failed native
build an error (CI sets it).
"""

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

try:  # setuptools >= 59 re-exports the distutils errors here
    from setuptools.errors import CCompilerError, ExecError, PlatformError
except ImportError:  # pragma: no cover - old setuptools
    from distutils.errors import CCompilerError
    from distutils.errors import DistutilsExecError as ExecError
    from distutils.errors import DistutilsPlatformError as PlatformError

REQUIRE_NATIVE = os.environ.get("PARITY_GATE_REQUIRE_NATIVE", "").strip() == "1"


class BuildFailed(Exception):
    pass


class optional_build_ext(build_ext):
    """build_ext that turns a missing/failing compiler into BuildFailed."""

    def run(self):
        try:
            super().run()
        except (PlatformError, ExecError, CCompilerError, OSError) as exc:
            raise BuildFailed(str(exc)) from exc

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except (CCompilerError, ExecError, PlatformError, OSError, ValueError) as exc:
            raise BuildFailed(str(exc)) from exc


def run_setup(native: bool) -> None:
    if native:
        setup(
            cffi_modules=["gate/fingerprint/_build.py:ffibuilder"],
            cmdclass={"build_ext": optional_build_ext},
        )
    else:
        setup()


try:
    run_setup(native=True)
except BuildFailed as exc:
    if REQUIRE_NATIVE:
        raise SystemExit(
            f"parity-gate: native fingerprint kernel failed to build (PARITY_GATE_REQUIRE_NATIVE=1): {exc}"
        ) from exc
    print(
        "WARNING: parity-gate: could not compile the native fingerprint kernel "
        f"({str(exc).splitlines()[0] if str(exc) else 'no C compiler'}); using the NumPy backend",
        file=sys.stderr,
    )
    run_setup(native=False)
