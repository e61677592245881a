"""Outputs whose shape depends on values are gated, not failed: a small detector built for the test
(``detection_models``: score threshold, top-k, NMS, a layer on the boxes kept) keeps more boxes in
float32 than in float64, and its clean check passes; a fault in its head and a fault in the shipped
graph's post-processing still fail, named where they are. Then the real torchvision SSDlite (random
weights, 160x160). Real exports, real ONNX Runtime sessions, real baseline files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from gate.core.fields import Obj
from gate.formats.baseline import read_baseline
from gate.verdict.types import Report

HERE = Path(__file__).parent
INPUTS = '[{ name = "x", shape = [1, 3, 64, 64], dtype = "float32", low = 0.0, high = 1.0 }]'
DEPENDENT = ("refine", "(model)[0][boxes]", "(model)[0][scores]", "(model)[0][labels]")


def _config(tmp: Path, factory: str = "detector", extra: str = "") -> Path:
    shutil.copy(HERE / "detection_models.py", tmp / "detection_models.py")
    path = tmp / "parity-gate.toml"
    path.write_text(f'providers = ["torch-cpu", "CPUExecutionProvider"]\n\n[[models]]\nname = "detector"\n'
                    f'factory = "detection_models:{factory}"\n{extra}inputs = {INPUTS}\n')
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("detector")
    cfg = load_config(_config(tmp))
    (updated,) = commands.update_baseline(cfg, cfg.models, cfg.providers)
    assert updated.warnings == []  # every rule holds against the baseline it writes
    return tmp


def check(tmp: Path, factory: str = "detector", extra: str = "") -> dict:
    cfg = load_config(_config(tmp, factory, extra))
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    assert Report.from_dict(Obj(report, "report")).to_dict() == report  # what `comment` reads back
    return report


def rows(report: dict, provider: int) -> dict[str, dict]:
    return {r["layer"]: r for r in report["models"][0]["providers"][provider]["layers"]}


def test_the_baseline_records_which_layers_depend_on_values(recorded):
    baseline = read_baseline(recorded / "baselines" / "detector.msgpack.zst")
    marked = {x.name: x.data_dependent for x in baseline.layers if x.data_dependent is not None}
    assert marked == dict.fromkeys(DEPENDENT, "op")  # the layers before the threshold are not
    assert baseline.layer("(model)[0][boxes]").fp.shape == (28, 4)  # float64 keeps 28 boxes
    assert baseline.entry_for(next(e.target for e in baseline.entries if e.target.provider == "torch-cpu"))[0] \
        .layers["(model)[0][boxes]"].fp.shape == (48, 4)  # float32 keeps 48


def test_clean_check_passes_with_the_rule_of_each_layer_said(recorded):
    report = check(recorded)
    assert report["verdict"] == "pass", report["first_regression"]
    reference, runtime = rows(report, 0), rows(report, 1)
    assert all(reference[n]["check"] == "reference-drift" and reference[n]["data_dependent"] == "op" for n in DEPENDENT)
    assert runtime["box_head"]["check"] == "error-growth" and "data_dependent" not in runtime["box_head"]
    assert runtime["refine"]["check"] == "recorded"  # 48 boxes against 28: held to what torch-cpu recorded
    boxes = runtime["(model)[0][boxes]"]
    assert boxes["check"] == "detections" and "28 matched of 28 in the reference and 48 here" in boxes["message"]
    assert "all 25 with score ≥ 0.5 matched" in boxes["message"]
    assert runtime["(model)[0][scores]"]["check"] == "detections" and runtime["(model)[0][scores]"]["value"] < 1e-5
    ort = rows(report, 2)
    assert ort["(model)[0][boxes]"]["check"] == "detections" and ort["(model)[0][boxes]"]["status"] == "pass"


def test_a_fault_in_the_head_fails_at_the_head(recorded):
    report = check(recorded, "detector_box_head_fault")
    first = report["first_regression"]
    assert (first["layer"], first["provider"], first["precision"], first["check"]) == \
        ("box_head", "torch-cpu", "float64", "reference-drift")


def test_a_fault_in_the_shipped_post_processing_fails_on_that_runtime_where_it_shows(recorded):
    """The graph's top-k keeps 20 boxes, not 48: confident boxes are lost on ONNX Runtime only."""
    report = check(recorded, extra='transform = "detection_models:narrow_top_k"\n')
    first = report["first_regression"]
    assert (first["provider"], first["layer"]) == ("CPUExecutionProvider", "refine")
    ort = rows(report, 2)
    boxes = ort["(model)[0][boxes]"]
    assert (boxes["status"], boxes["check"], boxes["value"]) == ("fail", "detections", 5.0)
    assert "5 of the reference's unmatched" in boxes["message"]
    assert report["models"][0]["providers"][1]["status"] == "pass"  # PyTorch float32 is untouched


def test_the_matrix_flow_carries_the_marks_and_the_matched_detections(recorded):
    """Export here, ONNX Runtime on another runner (a result file), the report from the files."""
    cfg = load_config(_config(recorded))
    commands.export_models(cfg, cfg.models, cfg.select_providers(["torch-cpu"]), recorded / "export")
    commands.collect(recorded / "export", cfg.select_providers(["CPUExecutionProvider"]), recorded / "cpu.msgpack.zst")
    report = commands.report_files(cfg, [recorded / "export", recorded / "cpu.msgpack.zst"]).to_dict()
    assert report["verdict"] == "pass", report["first_regression"]
    ort = rows(report, 2)
    assert (ort["(model)[0][boxes]"]["check"], ort["refine"]["check"]) == ("detections", "recorded")


def test_torchvision_ssdlite_with_random_weights_is_gated(tmp_path):
    """Its scores tie (random weights): float32, float64 and ONNX Runtime keep other boxes among them,
    so before this every clean check failed at (model)[0][boxes]."""
    shutil.copy(HERE / "detection_models.py", tmp_path / "detection_models.py")
    path = tmp_path / "parity-gate.toml"
    path.write_text('providers = ["torch-cpu", "CPUExecutionProvider"]\n\n[[models]]\nname = "ssdlite"\n'
                    'factory = "detection_models:ssdlite"\nexporter = "torchscript"\n'
                    'inputs = [{ name = "x", shape = [1, 3, 160, 160], dtype = "float32", low = 0.0, high = 1.0 }]\n')
    cfg = load_config(path)
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    assert report["verdict"] == "pass", report["first_regression"]
    for provider in (1, 2):
        boxes = rows(report, provider)["(model)[0][boxes]"]
        assert (boxes["check"], boxes["data_dependent"]) == ("detections", "op")
    assert rows(report, 1)["head.regression_head"]["check"] == "error-growth"  # before the post-processing
