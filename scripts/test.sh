#!/usr/bin/env bash
# The single truth for "do the tests pass": set up from a bare machine, lint, then run the
# whole suite on the native C kernel and the backend-dependent tests on the NumPy specification.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"

# A second ONNX Runtime distribution with a real second EP (OpenVINO on these CPUs). It
# replaces onnxruntime in its environment, so it gets its own venv, without torch: the
# `collect` side of the matrix runs there (tests/e2e/test_matrix.py).
OV_VENV="${PARITY_GATE_OPENVINO_VENV:-$ROOT/.venv-openvino}"
if [ ! -x "$OV_VENV/bin/python" ]; then
  echo "· creating $OV_VENV"
  python3 -m venv "$OV_VENV"
fi
"$OV_VENV/bin/python" -m pip install -q "onnxruntime-openvino==1.24.1" numpy onnx zstandard msgpack rich typer cffi
export PARITY_GATE_OPENVINO_PYTHON="$OV_VENV/bin/python"

# apt packages, installed through sudo where this is not root (as on GitHub-hosted runners); fails where
# apt-get, or root and sudo, are missing. What needs them skips, or fails under PARITY_GATE_REQUIRE_TOOLS=1.
apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  command -v apt-get > /dev/null && { [ -z "$sudo" ] || command -v sudo > /dev/null; } &&
    $sudo apt-get update -qq &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" > /dev/null
}

# The kernel's NEON path is tested on x86 under emulation (tests/unit/test_fingerprint_neon.py): an
# aarch64 cross compiler, its C library headers and qemu-user.
aarch64_tools() {
  command -v aarch64-linux-gnu-gcc > /dev/null && command -v qemu-aarch64 > /dev/null &&
    echo '#include <stdio.h>' | aarch64-linux-gnu-gcc -E -x c - > /dev/null 2>&1
}
if ! aarch64_tools; then
  echo "· installing qemu-user and the aarch64 cross compiler"
  apt_install --no-install-recommends qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross ||
    echo "· could not install the aarch64 cross tools (apt-get, as root or through sudo): the emulated NEON test will skip"
fi

# The lint step (scripts/lint.sh) runs shellcheck on the scripts, and actionlint runs it on the workflows' run: blocks.
if ! command -v shellcheck > /dev/null; then
  echo "· installing shellcheck"
  apt_install --no-install-recommends shellcheck || echo "· could not install shellcheck (apt-get, as root or through sudo): lint skips it (fails under PARITY_GATE_REQUIRE_TOOLS=1)"
fi

# The install tests build the package and install it into clean venvs offline: the core
# dependencies and the build requirements, downloaded once into a wheelhouse.
export PARITY_GATE_WHEELHOUSE="${PARITY_GATE_WHEELHOUSE:-$ROOT/.cache/wheelhouse}"
python -m pip download -q -d "$PARITY_GATE_WHEELHOUSE" numpy zstandard msgpack rich typer cffi "setuptools>=77" wheel \
  onnx onnxruntime "onnxruntime-openvino==1.24.1"  # an action leg that must end with one ONNX Runtime distribution

# The PR comment is rendered as GitHub shows it (tests/e2e/test_comment_render.py): headless Chromium,
# and Mermaid from npm at the version tests/render/package-lock.json pins.
if ! command -v chromium > /dev/null && ! command -v chromium-browser > /dev/null && ! command -v google-chrome > /dev/null; then
  echo "· installing Chromium"
  apt_install chromium fonts-noto-color-emoji || echo "· could not install Chromium: the comment render test will be skipped"
fi
if command -v npm > /dev/null; then
  npm ci --prefix tests/render --no-audit --no-fund --loglevel=error
else
  echo "· npm not found: the comment render test will be skipped"
fi

# zizmor audits the workflows in the lint step (scripts/lint.sh); it installs from the package index.
python -m pip install -q zizmor

echo "== lint"
PYTHON=python bash scripts/lint.sh

# The whole suite runs on the native kernel. The NumPy specification then gates the same bundled
# models end to end (committed baselines, injected faults, the export -> collect -> report matrix) and
# its own fingerprint tests: what depends on the backend, without running the rest twice.
NUMPY_PASS=(tests/unit/test_fingerprint.py tests/unit/test_fingerprint_backends.py tests/unit/test_fingerprint_sketch.py
            tests/e2e/test_gate.py tests/e2e/test_matrix.py)
status=0
if [ "$#" -gt 0 ]; then
  python -m pytest -q -p no:cacheprovider --durations=10 "$@" || status=$?
  exit $status
fi
# Two pytest workers, a test file each at a time (module fixtures are built once): much of a test's
# time is one Python thread (tracing an export, starting interpreters, pip), so two files share the
# cores better than one. PARITY_GATE_TEST_WORKERS=0 runs them in this process, one after another.
WORKERS=(-n "${PARITY_GATE_TEST_WORKERS:-2}" --dist loadfile)
echo "== tests (PARITY_GATE_BACKEND=native)"
PARITY_GATE_BACKEND=native python -m pytest -q -p no:cacheprovider --durations=15 "${WORKERS[@]}" || status=$?
echo "== tests (PARITY_GATE_BACKEND=numpy): the backend-dependent tests"
PARITY_GATE_BACKEND=numpy python -m pytest -q -p no:cacheprovider --durations=5 "${WORKERS[@]}" "${NUMPY_PASS[@]}" ||
  status=$?
exit $status
