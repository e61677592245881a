"""gate.runners.gpu_probe: GPU device classes for ONNX Runtime EPs without torch, from nvidia-smi's
own output (captured from real machines) or NVML; without a GPU, the generic class and why."""

from __future__ import annotations

import shutil

import pytest

from gate.config import ProviderSpec
from gate.core import device
from gate.runners import gpu_probe
from gate.runners.onnxruntime import OrtRunner, device_id

# `nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader` as drivers print it.
H100 = "NVIDIA H100 80GB HBM3, 9.0\n"
MIXED = "NVIDIA A100-SXM4-40GB, 8.0\nNVIDIA GeForce RTX 4090, 8.9\nTesla T4, 7.5\n"


def test_one_h100_is_named_like_torchs_class():
    [gpu] = gpu_probe.parse_nvidia_smi(H100)
    assert gpu == gpu_probe.Gpu("NVIDIA H100 80GB HBM3", (9, 0))
    assert gpu.device_class == "cuda-sm90-NVIDIA_H100_80GB_HBM3" == device.cuda_class("NVIDIA H100 80GB HBM3", (9, 0))


def test_several_gpus_keep_their_order_and_names_with_commas_in_mind():
    gpus = gpu_probe.parse_nvidia_smi(MIXED + "\n")
    assert [g.device_class for g in gpus] == ["cuda-sm80-NVIDIA_A100-SXM4-40GB", "cuda-sm89-NVIDIA_GeForce_RTX_4090",
                                              "cuda-sm75-Tesla_T4"]
    assert gpu_probe.parse_nvidia_smi("Odd, Name, Inc GPU, 12.0")[0] == gpu_probe.Gpu("Odd, Name, Inc GPU", (12, 0))


@pytest.mark.parametrize("line", ["NVIDIA H100 80GB HBM3, [N/A]", "NVIDIA H100", ", 9.0", "NVIDIA H100, 9"])
def test_an_unexpected_line_is_refused_naming_it(line):
    with pytest.raises(ValueError, match="unexpected nvidia-smi line"):
        gpu_probe.parse_nvidia_smi(line)


@pytest.mark.parametrize(("device_id", "visible", "index"), [
    (0, None, 0), (1, "", 1), (0, "2,3", 2), (1, "2, 3", 3), (2, "2,3", None), (0, "GPU-5d1f6c2e", None),
])
def test_device_id_counts_the_visible_devices(device_id, visible, index):
    assert gpu_probe.physical_index(device_id, visible) == index


def test_device_id_option_as_string_or_integer():
    assert device_id({}) == 0 and device_id({"device_id": "1"}) == 1 and device_id({"device_id": 2}) == 2


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_without_a_gpu_the_class_is_generic_and_says_why():
    probe = gpu_probe.cuda_probe(0)
    assert probe.device_class == device.GPU == "gpu"
    assert probe.reason.startswith("no NVIDIA GPU found (nvidia-smi is not on the PATH; ")
    target = OrtRunner(ProviderSpec("CUDAExecutionProvider", options={"device_id": "0"})).target()
    assert (target.device_class, target.label) == ("gpu", "gpu")


def test_cpu_eps_keep_the_cpu_class():
    assert OrtRunner(ProviderSpec("CPUExecutionProvider")).target().device_class == device.cpu_class()
