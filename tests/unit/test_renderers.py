"""The report files (gate.render.renderers): every renderer is a ``--<name> PATH`` option of each command that
writes reports, and a command writes the file of each option given, that renderer's text, and no other."""

from __future__ import annotations

import copy

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from gate.cli.app import app
from gate.config.shards import Shard
from gate.errors import GateError
from gate.render.renderers import RENDERERS
from gate.verdict.judge import assemble
from gate.verdict.merge import Leg, merge
from gate.verdict.report_file import load_report, write_report
from gate.verdict.shard import ShardRun
from tests.support.action_fixtures import REPORTS

ONE_JOB = load_report(REPORTS / "regressed.json")


@pytest.mark.parametrize("command", ["check", "report", "merge"])
def test_every_renderer_is_an_option_of_each_command_that_writes_reports(command):
    options = {p.opts[0]: p for p in get_command(app).commands[command].params}
    for r in RENDERERS:
        assert options[f"--{r.name}"].envvar == r.envvar, r.name


def legs(tmp_path) -> list[Leg]:
    out = []
    for index, name in enumerate(("tiny-cnn", "tiny-mlp"), 1):
        report = assemble([m for m in copy.deepcopy(ONE_JOB).models if m.name == name], ONE_JOB.environment)
        report.shard = ShardRun(Shard(index, 2), ("tiny-cnn", "tiny-mlp"))
        write_report(tmp_path / f"leg{index}.json", report)
        out.append(Leg(f"leg{index}.json", report))
    return out


@pytest.mark.parametrize("asked", [(r.name,) for r in RENDERERS] + [tuple(r.name for r in RENDERERS)])
def test_merge_writes_the_report_of_each_option_given_and_no_other(tmp_path, monkeypatch, asked):
    monkeypatch.chdir(tmp_path)
    expected = merge(legs(tmp_path), 2)
    out = tmp_path / "out"
    out.mkdir()
    args = [a for name in asked for a in (f"--{name}", str(out / f"r.{name}"))]
    result = CliRunner().invoke(app, ["merge", "leg1.json", "leg2.json", "--shards", "2", *args], env={
        r.envvar: "" for r in RENDERERS if r.envvar})
    assert result.exit_code == expected.exit_code == 1, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(f"r.{name}" for name in asked)  # no temp file left
    for r in RENDERERS:
        if r.name in asked:
            assert (out / f"r.{r.name}").read_text() == r.render(expected), r.name


def test_a_renderers_envvar_asks_for_its_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    legs(tmp_path)
    [r] = [r for r in RENDERERS if r.envvar]
    result = CliRunner().invoke(app, ["merge", "leg1.json", "leg2.json", "--shards", "2"],
                                env={r.envvar: str(tmp_path / "from-env")})
    assert result.exit_code == 1, result.output
    assert (tmp_path / "from-env").read_text() == r.render(merge(legs(tmp_path), 2))


def test_a_report_in_a_folder_not_made_yet_is_written_there_and_one_that_cannot_be_is_a_one_line_error(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    legs(tmp_path)
    env = {r.envvar: "" for r in RENDERERS if r.envvar}
    run = ["merge", "leg1.json", "leg2.json", "--shards", "2"]
    result = CliRunner().invoke(app, [*run, "--markdown", "reports/pr/out.md"], env=env)
    assert result.exit_code == 1, result.output
    assert (tmp_path / "reports" / "pr" / "out.md").read_text().strip()
    (tmp_path / "blocked").write_text("a file where the folder would be")  # twin: nothing can make it
    result = CliRunner().invoke(app, [*run, "--markdown", "blocked/out.md"], env=env)
    assert isinstance(result.exception, GateError) and result.exception.exit_code == 2, result.output
    assert str(result.exception).startswith("--markdown `blocked/out.md`: cannot write it")
