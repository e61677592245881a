"""PyTorch numerics settings (TF32, cuDNN, float32 matmul precision) recorded with the torch
providers' runs and baselines, and a PR that flips one named in a ``runtime-change`` hint.

Real runs throughout: baselines written here by ``update_baseline``, then ``check`` with a
factory (this file, copied into the config folder as ``numerics_factories.py``) that flips a
setting the way a model's code would. Each test restores the process-wide settings it touched.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from examples import zoo

# Factories -------------------------------------------------------------------------------


def cnn_high_matmul_precision():
    torch.set_float32_matmul_precision("high")
    return zoo.tiny_cnn()


def cnn_cudnn_benchmark():
    torch.backends.cudnn.benchmark = True
    return zoo.tiny_cnn()


class _HalfInFloat32(torch.nn.Module):
    """Rounds through float16 only when run in float32: the float64 reference does not move,
    the float32 runtime regresses (a runtime-only change, as flipping TF32 on a GPU is)."""

    def forward(self, x):
        return x.half().to(x.dtype) if x.dtype == torch.float32 else x


def cnn_tf32_and_a_runtime_regression():
    torch.backends.cuda.matmul.allow_tf32 = True
    m = zoo.tiny_cnn()
    m.block2.relu = torch.nn.Sequential(m.block2.relu, _HalfInFloat32())
    return m


def cnn_tf32_base():
    m = zoo.tiny_cnn()
    m.block2.relu = torch.nn.Sequential(m.block2.relu, torch.nn.Identity())
    return m


# Helpers ---------------------------------------------------------------------------------

INPUTS = '[{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]'


@pytest.fixture(autouse=True)
def _restore_settings():
    saved = (torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark,
             torch.backends.cuda.matmul.allow_tf32)
    yield
    torch.set_float32_matmul_precision(saved[0])
    torch.backends.cudnn.benchmark = saved[1]
    torch.backends.cuda.matmul.allow_tf32 = saved[2]


def _config(tmp: Path, factory: str, providers: str = '["torch-cpu"]') -> Path:
    shutil.copy(Path(__file__), tmp / "numerics_factories.py")
    path = tmp / "parity-gate.toml"
    path.write_text(f'baseline-dir = "baselines"\nproviders = {providers}\n\n[[models]]\nname = "tiny-cnn"\n'
                    f'factory = "{factory}"\ninputs = {INPUTS}\n')
    return path


def _run(tmp: Path, factory: str, update: bool = False, providers: str = '["torch-cpu"]') -> dict | None:
    from gate import commands
    from gate.config import load_config

    cfg = load_config(_config(tmp, factory, providers))
    if update:
        commands.update_baseline(cfg, cfg.models, cfg.providers)
        return None
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    json.dumps([m["hints"] for m in report["models"]], allow_nan=False)
    return report


def _runtime_changes(report: dict) -> list[dict]:
    return [h for h in report["models"][0]["hints"] if h["kind"] == "runtime-change"]


def _entry(tmp: Path) -> dict:
    from gate.formats.baseline import read_document

    (entry,) = read_document(tmp / "baselines" / "tiny-cnn.msgpack.zst")["providers"]["torch-cpu"].values()
    return entry


# Tests -----------------------------------------------------------------------------------


def test_the_torch_providers_record_their_numerics_settings_in_the_baseline(tmp_path):
    _run(tmp_path, "examples.zoo:tiny_cnn", update=True)
    numerics = _entry(tmp_path)["numerics"]
    assert numerics["torch.get_float32_matmul_precision()"] == torch.get_float32_matmul_precision()
    assert numerics["torch.backends.cudnn.benchmark"] == str(torch.backends.cudnn.benchmark)
    assert numerics["torch.backends.cuda.matmul.allow_tf32"] == str(torch.backends.cuda.matmul.allow_tf32)
    assert {"torch.backends.cudnn.allow_tf32", "torch.backends.cudnn.deterministic"} <= set(numerics)


def test_a_flipped_matmul_precision_is_a_runtime_change_naming_the_flag(tmp_path):
    _run(tmp_path, "examples.zoo:tiny_cnn", update=True)
    report = _run(tmp_path, "numerics_factories:cnn_high_matmul_precision")
    assert report["verdict"] == "pass", report["first_regression"]
    (h,) = _runtime_changes(report)
    assert (h["provider"], h["layer"]) == ("torch-cpu", "(model)")
    assert "torch.get_float32_matmul_precision() highest -> high" in h["message"]
    assert h["evidence"]["numerics"]["torch.get_float32_matmul_precision()"] == {"baseline": "highest", "now": "high"}


def test_cudnn_benchmark_flipped_in_a_worker_is_named_and_marked_cuda_only_on_cpu(tmp_path):
    providers = '[{ name = "torch-cpu", isolated = true }]'  # recorded in a worker, back through its result file
    _run(tmp_path, "examples.zoo:tiny_cnn", update=True, providers=providers)
    report = _run(tmp_path, "numerics_factories:cnn_cudnn_benchmark", providers=providers)
    (h,) = _runtime_changes(report)
    assert "torch.backends.cudnn.benchmark False -> True (no effect on CPU)" in h["message"]
    assert list(h["evidence"]["numerics"]) == ["torch.backends.cudnn.benchmark"]


def test_a_regressed_runtime_names_the_flag_in_its_runtime_change(tmp_path):
    _run(tmp_path, "numerics_factories:cnn_tf32_base", update=True)
    report = _run(tmp_path, "numerics_factories:cnn_tf32_and_a_runtime_regression")
    assert report["verdict"] == "regressed"
    assert report["first_regression"]["provider"] == "torch-cpu"
    (h,) = _runtime_changes(report)
    assert h["layer"] == report["first_regression"]["layer"] and h["evidence"]["reference_moved"] is False
    assert "PyTorch numerics settings changed since the baseline: torch.backends.cuda.matmul.allow_tf32 " \
           "False -> True (no effect on CPU)" in h["message"]


def test_a_setting_edited_in_a_real_baseline_file_is_named(tmp_path):
    from gate.formats.baseline import read_document, write_baseline

    _run(tmp_path, "examples.zoo:tiny_cnn", update=True)
    path = tmp_path / "baselines" / "tiny-cnn.msgpack.zst"
    doc = read_document(path)
    (entry,) = doc["providers"]["torch-cpu"].values()
    entry["numerics"]["torch.backends.cudnn.deterministic"] = "True"
    entry["numerics"]["torch.backends.future_flag"] = "x"  # recorded on one side only: not a change
    write_baseline(path, doc)
    (h,) = _runtime_changes(_run(tmp_path, "examples.zoo:tiny_cnn"))
    assert h["evidence"]["numerics"] == {"torch.backends.cudnn.deterministic": {"baseline": "True", "now": "False"}}


def test_an_unchanged_run_has_no_numerics_hint(tmp_path):
    _run(tmp_path, "examples.zoo:tiny_cnn", update=True)
    report = _run(tmp_path, "examples.zoo:tiny_cnn")
    assert report["verdict"] == "pass" and _runtime_changes(report) == []


def test_a_baseline_without_settings_compares_nothing(tmp_path):
    from gate.formats.baseline import read_document, write_baseline

    _run(tmp_path, "examples.zoo:tiny_cnn", update=True)
    path = tmp_path / "baselines" / "tiny-cnn.msgpack.zst"
    doc = read_document(path)
    for entry in doc["providers"]["torch-cpu"].values():
        del entry["numerics"]  # as written before the settings were recorded
    write_baseline(path, doc)
    assert _runtime_changes(_run(tmp_path, "numerics_factories:cnn_high_matmul_precision")) == []


def test_settings_torch_refuses_to_read_are_recorded_as_unreadable():
    """Mixing the legacy and the new TF32 APIs makes torch raise on reading allow_tf32: recorded,
    not a crash. In a subprocess, since it leaves this process's TF32 state mixed."""
    code = ("import json, torch; from gate.runners.torch_numerics import settings\n"
            "torch.set_float32_matmul_precision('highest')\n"
            "torch.backends.cuda.matmul.fp32_precision = 'tf32'\n"
            "print(json.dumps(settings()))")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    if not hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        pytest.skip("this torch has no fp32_precision API")
    assert got["torch.backends.cuda.matmul.allow_tf32"] == "unreadable: RuntimeError"
    assert got["torch.backends.cuda.matmul.fp32_precision"] == "tf32"
