"""Inputs worth trusting: batch sizes and input sets are cases of their own; real inputs
come from .npz files; inputs with NaN/Inf are refused before they reach the model."""

from __future__ import annotations

import json
import shutil

import numpy as np

from tests.conftest import ROOT, run_cli

CONFIG = """providers = ["torch-cpu", "CPUExecutionProvider"]
[[models]]
name = "cnn"
factory = "examples.zoo:tiny_cnn"
{inputs}
"""


def setup(tmp_path, inputs: str) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "parity-gate.toml").write_text(CONFIG.format(inputs=inputs))


def test_each_batch_size_and_input_set_is_a_case(tmp_path):
    setup(tmp_path, 'batch-sizes = [1, 3]\ninput-sets = 2\ninputs = [{ name = "x", shape = [1, 3, 16, 16] }]')
    assert run_cli("update-baseline", cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in (tmp_path / "baselines").iterdir()) == [
        "cnn.b1.s0.msgpack.zst", "cnn.b1.s1.msgpack.zst", "cnn.b3.s0.msgpack.zst", "cnn.b3.s1.msgpack.zst"]
    proc = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    shapes = {m["name"]: m["layers"] for m in report["models"]}
    assert set(shapes) == {"cnn.b1.s0", "cnn.b1.s1", "cnn.b3.s0", "cnn.b3.s1"}


def test_npz_inputs_and_nan_inputs(tmp_path):
    setup(tmp_path, 'inputs = "data/real.npz"')
    (tmp_path / "data").mkdir()
    x = np.random.default_rng(7).standard_normal((2, 3, 16, 16)).astype(np.float32)
    np.savez(tmp_path / "data" / "real.npz", x=x)
    assert run_cli("update-baseline", cwd=tmp_path).returncode == 0
    assert run_cli("check", cwd=tmp_path).returncode == 0
    x[0, 0, 0, 0] = np.nan
    np.savez(tmp_path / "data" / "real.npz", x=x)
    proc = run_cli("check", cwd=tmp_path)
    assert proc.returncode == 3
    assert "input `x` contains NaN/Inf" in proc.stdout.replace("\n", " ")
    # a file that cannot give numbers fails its model in one line, never a traceback
    for damaged in (b"PK\x03\x04 truncated", np.array(["a", "b"])):
        if isinstance(damaged, bytes):
            (tmp_path / "data" / "real.npz").write_bytes(damaged)
        else:
            np.savez(tmp_path / "data" / "real.npz", x=damaged)
        proc = run_cli("check", cwd=tmp_path)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 3 and "Traceback" not in out, out
        assert "BUILD_FAIL" in proc.stdout and "real.npz`" in proc.stdout
