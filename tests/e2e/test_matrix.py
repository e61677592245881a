"""The CPU + second-EP matrix: export once (torch), collect on another ONNX Runtime
distribution that has no torch (onnxruntime-openvino in its own venv, built by
scripts/test.sh), merge the result files into one verdict.

PARITY_GATE_OPENVINO_PYTHON names that environment's python. Without it the tests skip; under
PARITY_GATE_REQUIRE_TOOLS=1 (CI) they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from gate import commands
from gate.config import load_config
from gate.formats.results import read_runs
from tests.conftest import ROOT
from tests.support import tools
from tests.support.projects import examples_project

OV_PYTHON = os.environ.get("PARITY_GATE_OPENVINO_PYTHON")
OV = "OpenVINOExecutionProvider"

pytestmark = tools.needs(None if OV_PYTHON else "no onnxruntime-openvino environment (scripts/test.sh builds one)")


def collect_openvino(source: Path, out: Path) -> subprocess.CompletedProcess:
    assert OV_PYTHON, "CI must provide PARITY_GATE_OPENVINO_PYTHON (scripts/test.sh)"
    return subprocess.run([OV_PYTHON, "-m", "gate.cli", "collect", "--from", str(source), "--provider", OV,
                           "--out", str(out)], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("matrix")
    cfg = load_config(examples_project(tmp, baselines=True))
    commands.export_models(cfg, cfg.models, cfg.select_providers(["torch-cpu"]), tmp / "export")
    commands.collect(tmp / "export", cfg.select_providers(["CPUExecutionProvider"]), tmp / "cpu.msgpack.zst")
    proc = collect_openvino(tmp / "export", tmp / "ov.msgpack.zst")
    assert proc.returncode == 0, proc.stderr
    return tmp, cfg


def test_openvino_environment_has_no_torch():
    proc = subprocess.run([OV_PYTHON, "-c", "import onnxruntime as o; print(o.get_available_providers());"
                           "import importlib.util as u; print(u.find_spec('torch'))"], capture_output=True, text=True)
    assert OV in proc.stdout and proc.stdout.strip().endswith("None"), proc.stdout + proc.stderr


def test_report_merges_both_eps_into_one_verdict(matrix):
    tmp, cfg = matrix
    sources = [tmp / "export", tmp / "cpu.msgpack.zst", tmp / "ov.msgpack.zst"]
    commands.update_baseline(cfg, cfg.models, (), sources=sources)  # adds the OpenVINO entries
    report = commands.report_files(cfg, sources).to_dict()
    assert report["verdict"] == "pass", report["first_regression"]
    for model in report["models"]:
        names = [p["name"] for p in model["providers"]]
        assert names == ["torch-cpu", "torch-cpu", "CPUExecutionProvider", OV]
        ov = model["providers"][-1]
        assert ov["checked"] > 10 and ov["placement"]["by_provider"].get(OV, 0) > 0
        rows = {r["layer"] for r in ov["layers"]}
        assert rows == {r["layer"] for r in model["providers"][2]["layers"]}
        # the reference's outputs travel in the bundle: exact metrics on the runner without torch too
        exact = next(r["exact"] for r in ov["layers"] if r["layer"] == "(model)")
        assert exact["count"] > 0 and exact["max_abs"] < 1e-4


def test_ep_side_fault_is_blamed_on_openvino_at_its_layer(matrix):
    tmp, cfg = matrix
    commands.update_baseline(cfg, cfg.models, (), sources=[tmp / "export", tmp / "cpu.msgpack.zst",
                                                          tmp / "ov.msgpack.zst"])
    bad = tmp / "export-bad"
    shutil.copytree(tmp / "export", bad)
    # Scale one weight of the ONNX file the OpenVINO run uses, and only that file.
    (run,) = read_runs(bad / "tiny-transformer" / "run.msgpack.zst")
    layer = "blocks.1.mlp.0"
    value = run.onnx_map[layer].value
    assert run.onnx_map[layer].kind == "value"
    model = onnx.load(bad / "tiny-transformer" / "model.onnx")
    inits = {i.name: i for i in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    frontier, name = [value], None
    while frontier and name is None:  # the Linear's weight: a 2-D initializer just upstream (MatMul -> Add)
        node = producers[frontier.pop(0)]
        name = next((i for i in node.input if i in inits and len(inits[i].dims) == 2), None)
        frontier.extend(i for i in node.input if i in producers)
    weight = numpy_helper.to_array(inits[name])
    inits[name].CopyFrom(numpy_helper.from_array((weight * np.float32(1 + 1e-3)).astype(weight.dtype), name))
    onnx.save(model, bad / "tiny-transformer" / "model.onnx")
    proc = collect_openvino(bad, tmp / "ov-bad.msgpack.zst")
    assert proc.returncode == 0, proc.stderr
    report = commands.report_files(cfg, [tmp / "export", tmp / "cpu.msgpack.zst", tmp / "ov-bad.msgpack.zst"]).to_dict()
    first = report["first_regression"]
    assert report["verdict"] == "regressed"
    assert (first["model"], first["provider"], first["layer"], first["check"]) == (
        "tiny-transformer", OV, layer, "error-growth")
    cpu = next(p for p in report["models"][1]["providers"] if p["name"] == "CPUExecutionProvider")
    assert cpu["status"] == "pass"


def test_a_gpu_leg_without_a_gpu_build_fails_the_report_unless_allowed(matrix):
    from tests.conftest import run_cli

    tmp, cfg = matrix
    # This environment has the CPU build only: the "GPU leg" collects nothing but a skip, and says so.
    leg = run_cli("collect", "--from", str(tmp / "export"), "--provider", "CUDAExecutionProvider", "--out",
                  str(tmp / "gpu.msgpack.zst"), cwd=tmp)
    assert leg.returncode == 0, leg.stderr
    assert "warning: no GPU provider could run here (CUDAExecutionProvider not available)" in " ".join(leg.stdout.split())
    files = [str(tmp / "export"), str(tmp / "cpu.msgpack.zst"), str(tmp / "gpu.msgpack.zst")]
    failed = run_cli("report", *files, "--markdown", "r.md", "--junit", "r.xml", cwd=tmp)
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert "no GPU provider could run here (CUDAExecutionProvider not available)" in (tmp / "r.md").read_text()
    import xml.etree.ElementTree as ET

    errors = [c for c in ET.parse(tmp / "r.xml").iter("testcase") if c.find("error") is not None]
    assert errors and all(c.get("name") == "CUDAExecutionProvider float32" for c in errors)
    assert errors[0].find("error").get("type") == "NO_GPU"
    allowed = run_cli("report", *files, cwd=tmp, env={"PARITY_GATE_ALLOW_MISSING_GPU": "1"})
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert run_cli("report", *files, "--allow-missing-gpu", cwd=tmp).returncode == 0
    assert run_cli("report", files[0], files[1], cwd=tmp).returncode == 0  # no GPU leg at all: unaffected
