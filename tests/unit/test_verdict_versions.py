"""gate.verdict.versions: runtime versions that differ from the baseline's, and their place in the report."""

from __future__ import annotations

import json

import pytest

from gate.core.runs import Meta
from gate.errors import FormatError
from gate.verdict.notes import VersionChange
from gate.verdict.report_file import parse_report
from gate.verdict.types import ModelVerdict, Report
from gate.verdict.versions import version_changes


def test_a_new_release_is_named_a_build_label_is_not():
    baseline = Meta(torch="2.14.1", onnxruntime="1.31.1", onnx="1.23.0")
    run = Meta(torch="2.14.1+cpu", onnxruntime="1.32.0", onnx="1.23.0")
    assert version_changes(baseline, run) == {"onnxruntime": VersionChange("1.31.1", "1.32.0")}


def test_unknown_versions_and_missing_baselines_say_nothing():
    assert version_changes(None, Meta(torch="2.15.0")) == {}
    assert version_changes(Meta(torch=None), Meta(torch="2.15.0")) == {}


def test_versions_are_written_only_when_they_differ_and_read_back():
    plain = Report("pass", [ModelVerdict("m")]).to_dict()
    assert "versions" not in plain["models"][0]
    changed = Report("pass", [ModelVerdict("m", versions={"torch": VersionChange("2.14.1", "2.15.0")})])
    back = parse_report(json.dumps(changed.to_dict()).encode(), "r.json")
    assert back.models[0].versions == {"torch": VersionChange("2.14.1", "2.15.0")}


def test_a_forged_versions_entry_is_one_error_line():
    doc = Report("pass", [ModelVerdict("m")]).to_dict()
    doc["models"][0]["versions"] = {"torch": {"baseline": 2}}
    with pytest.raises(FormatError) as caught:
        parse_report(json.dumps(doc).encode(), "r.json")
    assert str(caught.value) == "report `r.json`: `models[0].versions.torch.baseline`: expected a string, got a number"
