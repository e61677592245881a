"""A user's wrapper calling a Hugging Face ``CLIPModel`` with keywords, through the CLI: the inner
model's outputs (same-shaped embeddings and logits, pooled outputs, attention weights) are each
compared with the value that computes them on ONNX Runtime, so a clean check passes with errors of
float32 rounding, never of a neighbour's value (``integration/test_layermap`` pins the map itself)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import ROOT, run_cli

INNER = ["m[logits_per_image]", "m[logits_per_text]", "m[text_embeds]", "m[image_embeds]",
         "m[text_model_output][pooler_output]", "m[vision_model_output][pooler_output]"]


def test_a_clip_wrapper_is_gated_clean_on_every_inner_output(tmp_path):
    shutil.copy(ROOT / "tests" / "integration" / "mapping_models.py", tmp_path / "mapping_models.py")
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
