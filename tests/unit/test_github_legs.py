"""The legs' report artifacts as the judging job downloads them (gate.github.legs): each shard's latest
attempt, every folder one of them, every report read as untrusted."""

from __future__ import annotations

import copy

import pytest

from gate.config.shards import Shard
from gate.errors import GateError
from gate.github.legs import latest
from gate.verdict.report_file import load_report, write_report
from gate.verdict.shard import ShardRun
from tests.support.action_fixtures import REPORTS

REPORT = load_report(REPORTS / "pass.json")


def artifact(folder, name: str, index: int, count: int = 2, file: str = "report.json") -> None:
    report = copy.deepcopy(REPORT)
    report.shard = ShardRun(Shard(index, count), ("tiny-cnn",))
    (folder / name).mkdir(parents=True)
    write_report(folder / name / file, report)
    (folder / name / "report.md").write_text("the comment\n")  # what the upload holds beside it


def test_each_shards_latest_attempt_is_taken(tmp_path):
    artifact(tmp_path, "parity-gate-report-shard-1-of-2-a1", 1)
    artifact(tmp_path, "parity-gate-report-shard-1-of-2-a10", 1)  # re-run, and re-run again: by number, not name
    artifact(tmp_path, "parity-gate-report-shard-1-of-2-a2", 1)
    artifact(tmp_path, "parity-gate-pr-shard-2-of-2-a1", 2, file="leg.json")  # the fork flow's, its one JSON file
    legs = latest(tmp_path, 2)
    assert [leg.name for leg in legs] == ["parity-gate-report-shard-1-of-2-a10", "parity-gate-pr-shard-2-of-2-a1"]
    assert legs[0].report.shard == ShardRun(Shard(1, 2), ("tiny-cnn",))  # written and read back alike


def test_an_empty_download_has_no_leg(tmp_path):
    assert latest(tmp_path, 4) == []


def refused(tmp_path, count: int = 2) -> str:
    with pytest.raises(GateError) as info:
        latest(tmp_path, count)
    assert info.value.exit_code == 2
    return str(info.value)


def test_what_is_not_a_legs_artifact_is_refused(tmp_path):
    (tmp_path / "parity-gate-report").mkdir()
    assert refused(tmp_path) == (f"`parity-gate-report` in `{tmp_path}`: not a leg's report artifact "
                                 "(a folder <name>-shard-K-of-N-a<attempt>)")


def test_a_leg_of_another_cut_is_refused(tmp_path):
    artifact(tmp_path, "parity-gate-report-shard-3-of-4-a1", 3, 4)
    assert refused(tmp_path) == "artifact `parity-gate-report-shard-3-of-4-a1`: a leg of shard 3/4; this merge expects 2 shards"


def test_two_artifacts_of_one_shard_and_attempt_are_refused(tmp_path):
    artifact(tmp_path, "parity-gate-report-shard-1-of-2-a1", 1)
    artifact(tmp_path, "upload-by-the-pr-shard-1-of-2-a1", 1)
    assert refused(tmp_path) == ("shard 1/2 has two report artifacts of attempt 1: "
                                 "`parity-gate-report-shard-1-of-2-a1` and `upload-by-the-pr-shard-1-of-2-a1`")


def test_an_artifact_holding_another_shards_report_is_refused(tmp_path):
    artifact(tmp_path, "parity-gate-report-shard-1-of-2-a1", 2)
    assert refused(tmp_path) == ("artifact `parity-gate-report-shard-1-of-2-a1` holds the report of shard 2/2, "
                                 "not of shard 1/2")


def test_an_artifact_without_one_report_is_refused(tmp_path):
    (tmp_path / "parity-gate-report-shard-1-of-2-a1").mkdir()
    assert refused(tmp_path) == "artifact `parity-gate-report-shard-1-of-2-a1`: holds no JSON report (expected report.json)"


def test_a_broken_report_is_refused_naming_its_file(tmp_path):
    folder = tmp_path / "parity-gate-report-shard-1-of-2-a1"
    folder.mkdir()
    (folder / "report.json").write_text('{"schema": "parity-gate/report", "version": 1, "verdict": "pass"}')
    assert refused(tmp_path) == f"report `{folder / 'report.json'}`: `models`: expected an array, got nothing"
