#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment and install parity-gate into it,
# with the native fingerprint kernel required. Sourced by demo.sh and test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PARITY_GATE_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "· creating $VENV"
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
# torch first and pinned: an unpinned resolve would pull a newer CUDA build from the index.
"$VENV/bin/python" -m pip install -q "torch==2.14.1" "torchvision==0.29.1"
PARITY_GATE_REQUIRE_NATIVE=1 "$VENV/bin/python" -m pip install -q -e "${ROOT}[torch,test]"
export PATH="$VENV/bin:$PATH"
