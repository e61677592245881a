"""The step runner itself (tests/support/action_runner.py): expressions, uses: emulation, failure flow."""

from __future__ import annotations

import sys
import textwrap

from tests.support.action_runner import ActionRunner
from tests.support.expressions import Evaluator, condition

ACTION = """
name: probe
description: probe
inputs:
  word:
    description: w
    default: ${{ github.repository }}
outputs:
  seen:
    description: s
    value: ${{ steps.show.outputs.seen }}
runs:
  using: composite
  steps:
    - id: py
      uses: actions/setup-python@v5
      with:
        python-version: "3.12"
        update-environment: false
    - id: show
      shell: bash
      env:
        PY: ${{ steps.py.outputs.python-path }}
        WORD: ${{ inputs.word }}
        TEMP: ${{ runner.temp }}
        FROM_ENV: ${{ env.JOB_VAR }}
      run: |
        "$PY" -c 'import sys; print(sys.executable)'
        echo "seen=$WORD|$FROM_ENV|$([ -d "$TEMP" ] && echo temp-ok)" >> "$GITHUB_OUTPUT"
        echo "# summary line" >> "$GITHUB_STEP_SUMMARY"
        exit 4
    - id: after
      shell: bash
      run: echo never
    - id: cleanup
      if: always()
      shell: bash
      run: echo "cleanup ran"
"""


def test_runner_evaluates_contexts_emulates_setup_python_and_stops_at_a_failure(tmp_path):
    (tmp_path / "action").mkdir()
    (tmp_path / "action" / "action.yml").write_text(textwrap.dedent(ACTION))
    (tmp_path / "ws").mkdir()
    runner = ActionRunner(tmp_path / "action", tmp_path / "ws", api_url="http://127.0.0.1:9", repository="o/r",
                          env={"JOB_VAR": "from-job"})
    run = runner.run({})
    assert run.returncode == 4
    assert run.step("show").stdout.strip() == sys.executable
    assert run.outputs == {"seen": "o/r|from-job|temp-ok"}
    assert [s.conclusion for s in run.steps] == ["success", "failure", "skipped", "success"]
    assert run.summary == "# summary line\n"


def test_expressions_follow_the_documented_rules():
    ctx = {"inputs": {"mode": "Check", "n": "3"}, "steps": {"a": {"outputs": {"x": ""}}}, "env": {}}
    ev = Evaluator(ctx)
    assert ev.eval("inputs.mode == 'check'") is True  # strings compare case-insensitively
    assert ev.eval("inputs.n == 3") is True  # and coerce to numbers against numbers
    assert ev.eval("steps.a.outputs.x || 'fallback'") == "fallback"
    assert ev.eval("env.UNSET == ''") is True  # null and '' are both 0
    assert ev.eval("inputs.missing == 0") is True and ev.eval("inputs.mode == 0") is False
    assert ev.eval("contains(fromJSON('[\"check\",\"report\"]'), inputs.mode)") is True
    assert ev.eval("format('{0}-{1}', inputs.mode, inputs.n)") == "Check-3"
    assert condition("inputs.mode == 'check'", ctx, "failure") is False  # implicit success()
    assert condition("${{ always() }}", ctx, "failure") is True
