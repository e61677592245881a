"""scripts/bench_gpu_ort.py on a machine without CUDA: one line saying why, exit 0, nothing measured."""

from __future__ import annotations

import os
import subprocess
import sys

import onnxruntime
import pytest

from tests.conftest import ROOT


@pytest.mark.skipif("CUDAExecutionProvider" in onnxruntime.get_available_providers(), reason="CUDA is here")
def test_without_cuda_it_says_so_in_one_line_and_exits_zero(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_gpu_ort.py"), "--json", str(out)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "bench_gpu_ort: no CUDA here (CUDAExecutionProvider is not available (ONNX Runtime distribution: onnxruntime; "
        "install onnxruntime-gpu)); nothing measured"]
    assert not out.exists()
