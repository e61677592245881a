"""Tensors a model holds as plain attributes are its data, as buffers are: a changed table loaded from a
file is named a weight change, naming the tensor, and the stored graph takes its new values; the same table
registered as a buffer is the same model. Real exports, real ONNX Runtime; models: attribute_models.py."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch

from gate import commands
from gate.config import load_config

HERE = Path(__file__).parent


def _project(tmp: Path, table: torch.Tensor, factory: str = "held") -> Path:
    shutil.copy(HERE / "attribute_models.py", tmp / "attribute_models.py")
    torch.save(table, tmp / "table.pt")
    path = tmp / "parity-gate.toml"
    path.write_text('providers = ["torch-cpu", "CPUExecutionProvider"]\n\n[[models]]\nname = "held"\n'
                    f'factory = "attribute_models:{factory}"\n'
                    'inputs = [{ name = "x", shape = [4, 8], dtype = "float32" }]\n')
    return path


def _run(path: Path, command=commands.check) -> dict:
    sys.modules.pop("attribute_models", None)  # the file as it is now, from this folder
    cfg = load_config(path)
    return command(cfg, cfg.models, cfg.providers)


def test_a_table_held_as_an_attribute_that_changed_is_named_as_the_weights_that_changed(tmp_path):
    table = torch.linspace(0.5, 1.5, 16)
    _run(_project(tmp_path, table), commands.update_baseline)
    table[3] *= 1.001
    report = _run(_project(tmp_path, table)).to_dict()
    model = report["models"][0]
    assert report["verdict"] == "regressed" and report["first_regression"]["provider"] == "torch-cpu"
    reuse = model["reuse"]
    assert (reuse["changed"], reuse["details"]) == (["weights"], ["weights: 1 changed: `table`"])
    (hint,) = [h for h in model["hints"] if h["kind"] == "model-change"]
    assert hint["evidence"]["cause"] == "weights" and hint["evidence"]["tensors_changed"] == ["table"]
    ort = next(p for p in model["providers"] if p["name"] == "CPUExecutionProvider")
    assert ort["status"] == "pass", ort  # the graph ONNX Runtime ran holds the new table


def test_the_same_table_registered_as_a_buffer_is_the_same_model(tmp_path):
    """The twin: a refactor from attribute to buffer edits the source, and changes neither the operations
    the forward runs nor the model's data."""
    table = torch.linspace(0.5, 1.5, 16)
    _run(_project(tmp_path, table), commands.update_baseline)
    path = _project(tmp_path, table)
    models = tmp_path / "attribute_models.py"
    models.write_text(models.read_text().replace("return Held()", "return Held(register=True)"))
    report = _run(path).to_dict()
    assert report["verdict"] == "pass", report["first_regression"]
    reuse = report["models"][0]["reuse"]
    assert reuse["changed"] == ["source"], reuse  # not the operations (`code`), nor the data (`weights`)
