"""The layer map's wires through the gate, on real exports and real ONNX Runtime sessions.

A user's wrapper calling a Hugging Face ``CLIPModel``: the inner model's outputs (same-shaped
embeddings and logits, pooled outputs, attention weights) are each compared with the value that
computes them, so a clean check passes with errors of float32 rounding, never of a neighbour's value
(``integration/test_layermap`` pins the map itself). An LSTM stack exported by TorchScript, which
records no call's outputs: each LSTM's h and c share a shape, and the capture's numbers tell them
apart; a runtime fault in one of them is still named, there or at the next layer that reads it
(a swap of the two values passes at the states, by their numbers, and fails where they are read)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from gate.verdict.report_file import report_document
from tests.conftest import ROOT, run_cli

MODELS = ROOT / "tests" / "integration" / "mapping_models.py"
INNER = ["m[logits_per_image]", "m[logits_per_text]", "m[text_embeds]", "m[image_embeds]",
         "m[text_model_output][pooler_output]", "m[vision_model_output][pooler_output]"]
STATES = ["first[1][0]", "first[1][1]", "second[1][0]", "second[1][1]"]  # h and c of each LSTM
ORT = "CPUExecutionProvider"


def test_a_clip_wrapper_is_gated_clean_on_every_inner_output(tmp_path):
    shutil.copy(MODELS, tmp_path / "mapping_models.py")
    (tmp_path / "parity-gate.toml").write_text(
        'providers = ["torch-cpu", "CPUExecutionProvider"]\n[[models]]\nname = "clip"\n'
        'factory = "mapping_models:clip_eager"\ninputs = "mapping_models:clip_inputs"\n')
    proc = run_cli("update-baseline", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    model = json.loads(Path(tmp_path / "r.json").read_text())["models"][0]
    ort = next(p for p in model["providers"] if p["name"] == "CPUExecutionProvider")
    rows = {r["layer"]: r for r in ort["layers"]}
    for layer in INNER:
        assert rows[layer]["status"] == "pass" and rows[layer]["value"] < 1e-5, rows[layer]
    weights = rows["m.text_model.encoder.layers.0.self_attn[1]"]
    assert weights["status"] in ("pass", "folded") and "shape" not in (weights["message"] or "")
    assert not [r for r in ort["layers"] if "matches this output's shape" in (r["message"] or "")]


def _lstm_config(tmp: Path, transform: str | None = None) -> Path:
    path = tmp / f"lstm-{transform or 'clean'}.toml"
    path.write_text('baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n'
                    '[[models]]\n'
                    'name = "lstm"\nfactory = "mapping_models:lstm_stack"\nexporter = "torchscript"\n'
                    'inputs = [{ name = "x", shape = [2, 5, 8], dtype = "float32" }]\n'
                    + (f'transform = "mapping_models:{transform}"\n' if transform else ""))
    return path


def _check(tmp: Path, transform: str | None = None) -> tuple[dict, dict]:
    """The JSON report and the ONNX Runtime rows by layer."""
    cfg = load_config(_lstm_config(tmp, transform))
    report = report_document(commands.check(cfg, cfg.models, cfg.providers))
    ort = next(p for p in report["models"][0]["providers"] if p["name"] == ORT)
    return report, {r["layer"]: r for r in ort["layers"]}


@pytest.fixture(scope="module")
def lstm(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("lstm")
    shutil.copy(MODELS, tmp / "mapping_models.py")
    cfg = load_config(_lstm_config(tmp))
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    return tmp


def test_same_shaped_lstm_states_are_matched_by_their_numbers_and_judged(lstm):
    report, rows = _check(lstm)
    assert report["verdict"] == "pass", report["first_regression"]
    for layer in STATES:  # h and c of one call share a shape: absent by shape alone, judged by numbers
        assert rows[layer]["status"] == "pass" and rows[layer]["value"] < 1e-5, rows[layer]


def test_a_fault_within_rounding_of_torch_is_named_at_the_state_itself(lstm):
    report, rows = _check(lstm, "first_c_by_3e_6")
    assert report["verdict"] == "regressed"
    first = report["first_regression"]
    assert (first["layer"], first["provider"]) == ("first[1][1]", ORT), first
    assert rows["first[1][0]"]["status"] == "pass"


def test_a_fault_past_rounding_leaves_the_state_absent_and_is_named_at_the_next_judged_layer(lstm):
    report, rows = _check(lstm, "first_c_by_1e_3")
    assert report["verdict"] == "regressed"
    assert rows["first[1][1]"]["status"] == "absent"
    assert "none within float32 noise" in rows["first[1][1]"]["message"], rows["first[1][1]"]
    assert rows["first[1][0]"]["status"] == "pass"  # its h is still told apart from the faulty c
    first = report["first_regression"]
    assert (first["layer"], first["provider"]) == ("second[0]", ORT), first  # the next judged layer reads it


def test_states_traded_between_same_shaped_values_pass_there_by_their_numbers_and_fail_where_read(lstm):
    """Numbers pick each state's value, so a runtime that swaps h and c passes at the states (each
    value is one of torch's numbers); the layer that reads them, in order, is named."""
    report, rows = _check(lstm, "first_h_c_swapped")
    assert rows["first[1][0]"]["status"] == rows["first[1][1]"]["status"] == "pass"
    first = report["first_regression"]
    assert report["verdict"] == "regressed"
    assert (first["layer"], first["provider"]) == ("second[0]", ORT), first
