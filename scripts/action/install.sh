#!/usr/bin/env bash
# action.yml "Install parity-gate": a venv with what this mode needs (gate/github/install.py planned
# it), unless the cache restored it. PYTHON is the interpreter to build the venv on; with the
# python-path input the venv also sees that Python's own packages (a runner's preinstalled CUDA torch).
set -euo pipefail
echo "::group::Install parity-gate"
if [ -n "${PARITY_GATE_TEST_VENV:-}" ]; then
  # Test-only: parity-gate's own e2e tests hand in a prepared environment (no install per test).
  venv="$PARITY_GATE_TEST_VENV"
  echo "Using the prepared environment $venv (PARITY_GATE_TEST_VENV, test-only)"
else
  venv="${VENV:?the planned venv path}"
fi
if [ "$RUNNER_OS" = Windows ]; then py="$venv/Scripts/python.exe"; bin="$venv/Scripts/parity-gate.exe"
else py="$venv/bin/python"; bin="$venv/bin/parity-gate"; fi

if [ -z "${PARITY_GATE_TEST_VENV:-}" ]; then
  if [ "$CACHE_HIT" = true ] && "$bin" --version > /dev/null 2>&1; then
    echo "Restored from the cache ($KEY): nothing to install"
  else
    [ "$CACHE_HIT" = true ] && echo "::warning title=parity-gate::the cached environment does not run here; reinstalling"
    rm -rf "$venv"
    start=$SECONDS
    "$PYTHON" -m venv ${SYSTEM_SITE:+--system-site-packages} "$venv"
    set -f  # PACKAGES, INDEX_ARGS and EXTRA_PIP_ARGS are split into words on purpose, never globbed
    # shellcheck disable=SC2086
    "$py" -m pip install --disable-pip-version-check --progress-bar off "$GITHUB_ACTION_PATH" $PACKAGES \
      ${CONSTRAINTS:+-c "$CONSTRAINTS"} $INDEX_ARGS $EXTRA_PIP_ARGS
    set +f
    if [ -n "${ORT_DIST:-}" ]; then
      # One ONNX Runtime distribution, never two: a requirement may have pulled in another one.
      "$py" "$GITHUB_ACTION_PATH/gate/github/ortdist.py" ensure "$ORT_DIST"
    fi
    echo "Installed in $((SECONDS - start)) s"
    echo "installed=true" >> "$GITHUB_OUTPUT"
  fi
fi
"$bin" --version
echo "bin=$bin" >> "$GITHUB_OUTPUT"
echo "::endgroup::"
