#!/usr/bin/env bash
# action.yml "Install parity-gate": a venv with what this mode needs (gate/github/install.py planned
# it), unless the cache restored it or the venv-path input names a ready one. PYTHON is the interpreter
# to build the venv on; with the python-path input the venv also sees that Python's own packages (a
# runner's preinstalled CUDA torch). In mode comment the plan holds the core only and EXTRA_PIP_ARGS is
# empty (action.yml): nothing a pull request's files say is installed where the comment is written.
set -euo pipefail
echo "::group::Install parity-gate"
venv="${VENV:?the planned venv path}"
if [ "$RUNNER_OS" = Windows ]; then py="$venv/Scripts/python.exe"; bin="$venv/Scripts/parity-gate.exe"
else py="$venv/bin/python"; bin="$venv/bin/parity-gate"; fi

if [ -n "${READY:-}" ]; then
  echo "Using the environment given (venv-path $venv): nothing installed"
elif [ "$CACHE_HIT" = true ] && "$bin" --version > /dev/null 2>&1; then
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
"$bin" --version
echo "bin=$bin" >> "$GITHUB_OUTPUT"
echo "::endgroup::"
