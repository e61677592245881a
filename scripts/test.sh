#!/usr/bin/env bash
# The single truth for "do the tests pass": set up from a bare machine, lint, then run the
# whole suite once per fingerprint backend (native C kernel, NumPy specification).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"

if [ -x scripts/lint.sh ]; then
  echo "== lint"
  bash scripts/lint.sh
fi

status=0
for backend in native numpy; do
  echo "== tests (PARITY_GATE_BACKEND=$backend)"
  PARITY_GATE_BACKEND=$backend python -m pytest -q -p no:cacheprovider "$@" || status=$?
done
exit $status
