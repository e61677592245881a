"""Every graph is loaded before it is trusted: the dynamo exporter writes, without an error, a
``Squeeze`` of a dimension that is not 1 (from a no-op ``x.squeeze(1)``) that ONNX Runtime refuses at
load. The gate then exports with TorchScript and says why in the report; where no exporter gives a
graph that loads (or a transform's graph does not load), the model is an export failure whose
PyTorch side is still recorded and judged (``test_export_fail``), and no such graph is stored as an
export."""

from __future__ import annotations

import json
from pathlib import Path

from gate.formats.baseline import read_baseline
from tests.conftest import run_cli
from tests.support.stage_projects import states

REFUSED = "dynamo graph failed to load: ONNX checker: [ShapeInferenceError]"
SQUEEZE = ("(op_type:Squeeze, node name: node_squeeze): [ShapeInferenceError] Dimension of input 1 must be 1 "
           "instead of 16")

MODELS = '''
import numpy as np
import onnx
import torch
from onnx import helper
from torch import nn


class Squeezed(nn.Module):
    def __init__(self, histc: bool = False):
        super().__init__()
        self.lin, self.histc = nn.Linear(8, 8), histc

    def forward(self, x):
        y = self.lin(x).squeeze(1)  # dimension 1 is 16: a no-op in PyTorch
        # torch.histc over a stated range: the dynamo exporter converts it, TorchScript's does not
        return y * (1 + torch.histc(x, bins=4, min=-4, max=4).max()) if self.histc else y


def squeezed():
    return Squeezed()


def squeezed_histc():
    return Squeezed(histc=True)


def squeeze_output(proto):
    """A transform that squeezes the output's dimension 1 (16): a graph ONNX Runtime refuses."""
    out = proto.graph.output[0]
    proto.graph.initializer.append(onnx.numpy_helper.from_array(np.array([1]), "sq_axes"))
    proto.graph.node.append(helper.make_node("Squeeze", [out.name, "sq_axes"], ["squeezed"]))
    proto.graph.output[0].name = "squeezed"
    return proto
'''


def write(tmp: Path, factory: str, extra: str = "") -> dict[str, str]:
    (tmp / "squeeze_models.py").write_text(MODELS)
    (tmp / "parity-gate.toml").write_text(
        'providers = ["torch-cpu", "CPUExecutionProvider"]\n[[models]]\nname = "sq"\n'
        f'factory = "squeeze_models:{factory}"\ninputs = [{{ name = "x", shape = [2, 16, 8] }}]\n{extra}')
    return {"PARITY_GATE_CACHE_DIR": str(tmp / "store")}  # a store of its own: what it holds is this test's


def _providers(report: dict) -> dict[str, dict]:
    return {f"{p['name']} {p['precision']}": p for p in report["models"][0]["providers"]}


def test_a_dynamo_graph_that_does_not_load_falls_back_to_torchscript(tmp_path):
    env = write(tmp_path, "squeezed")
    proc = run_cli("update-baseline", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = read_baseline(tmp_path / "baselines" / "sq.msgpack.zst").meta
    assert meta.exporter == "torchscript" and meta.export_fallback.startswith(REFUSED)
    assert SQUEEZE in meta.export_fallback

    proc = run_cli("check", "--json", "r.json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    model = report["models"][0]
    assert report["verdict"] == "pass" and model["exporter"] == "torchscript"
    assert model["export_fallback"].startswith(REFUSED) and SQUEEZE in model["export_fallback"]
    # The graph that loaded was stored by update-baseline and is taken as it is, with its reason.
    assert states(report)["export"] == "hit"
    ort = _providers(report)["CPUExecutionProvider float32"]
    assert ort["status"] == "pass" and ort["checked"] > 0, ort


def test_where_no_exporter_gives_a_graph_that_loads_the_pytorch_side_is_still_gated(tmp_path):
    env = write(tmp_path, "squeezed_histc")
    proc = run_cli("update-baseline", cwd=tmp_path, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "recorded the reference and the PyTorch providers only" in last
    assert "dynamo: graph failed to load: ONNX checker: [ShapeInferenceError]" in last, last
    assert "TorchScript: UnsupportedOperatorError" in last, last
    baseline = read_baseline(tmp_path / "baselines" / "sq.msgpack.zst")
    assert baseline.meta.exporter is None and baseline.meta.graph_digest is None
    assert {e.target.provider for e in baseline.entries} == {"torch-cpu"}
    stored = tmp_path / "store" / "export"
    assert not stored.exists() or not any(stored.iterdir())  # a graph that does not load is never an export

    proc = run_cli("check", "--json", "r.json", cwd=tmp_path, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "error" and report["models"][0]["error"]["status"] == "EXPORT_FAIL"
    rows = _providers(report)
    for name in ("torch-cpu float64", "torch-cpu float32"):
        assert rows[name]["status"] == "pass" and rows[name]["checked"] > 0, rows[name]
    ort = rows["CPUExecutionProvider float32"]
    assert (ort["status"], ort["error_status"], ort["checked"]) == ("error", "EXPORT_FAIL", 0)
    assert ort["reason"].startswith("not run: model `sq`: export failed (dynamo: graph failed to load: ONNX "
                                    "checker:")


def test_a_transform_whose_graph_does_not_load_is_an_export_failure(tmp_path):
    env = write(tmp_path, "squeezed", 'transform = "squeeze_models:squeeze_output"\n')
    proc = run_cli("update-baseline", cwd=tmp_path, env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "recorded the reference and the PyTorch providers only" in last
    said = "the graph transform `squeeze_models:squeeze_output` returns does not load: ONNX Runtime: "
    assert said in last, last
    assert "Dimension of input 1 must be 1 instead of 16" in last
    baseline = read_baseline(tmp_path / "baselines" / "sq.msgpack.zst")
    assert {e.target.provider for e in baseline.entries} == {"torch-cpu"}
