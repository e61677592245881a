"""Provider names: the canonical ones, the aliases users may type, and each one's kind, which picks its
runner (``gate.runners.registry``). Every name not in ``TORCH`` that ends in ``ExecutionProvider`` is an
ONNX Runtime EP.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.core.target import REFERENCE_PROVIDER
from gate.errors import ConfigError


@dataclass(frozen=True)
class Kind:
    runner: str  # "torch" | "torch-compile" | "onnxruntime"
    device: str | None = None  # "cpu" | "cuda" for PyTorch providers; ONNX Runtime EPs pick their own

    @property
    def torch(self) -> bool:
        return self.runner != "onnxruntime"


TORCH = {
    REFERENCE_PROVIDER: Kind("torch", "cpu"),
    "torch-cuda": Kind("torch", "cuda"),
    "torch-compile": Kind("torch-compile", "cpu"),
    "torch-compile-cuda": Kind("torch-compile", "cuda"),
}
ONNXRUNTIME = Kind("onnxruntime")
# ONNX Runtime EPs whose kernels run on the host CPU: their device class is the CPU's.
CPU_EPS = ("CPUExecutionProvider", "OpenVINOExecutionProvider")

ALIASES = {
    "cpu": "CPUExecutionProvider",
    "ort-cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "ort-cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "trt": "TensorrtExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "rocm": "ROCMExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "dml": "DmlExecutionProvider",
}

@dataclass(frozen=True)
class GpuEp:
    """What the gate knows of an ONNX Runtime EP whose kernels run on a GPU: the one table of them."""

    distribution: str  # the ONNX Runtime build that brings it
    io_device: str  # where its outputs live (IOBinding's device_type)
    cuda: bool = False  # it runs on CUDA, where the device class is probed


GPU_EPS = {"CUDAExecutionProvider": GpuEp("onnxruntime-gpu", "cuda", cuda=True),
           "TensorrtExecutionProvider": GpuEp("onnxruntime-gpu", "cuda", cuda=True),
           "ROCMExecutionProvider": GpuEp("onnxruntime-rocm", "cuda"),
           "MIGraphXExecutionProvider": GpuEp("onnxruntime-migraphx", "cuda"),
           "DmlExecutionProvider": GpuEp("onnxruntime-directml", "dml")}
GPU_TORCH = ("torch-cuda", "torch-compile-cuda")


# onnxruntime.get_all_providers() (1.32): a name that differs from one of these in case only is that EP
KNOWN_EPS = {f"{ep.lower()}executionprovider": f"{ep}ExecutionProvider" for ep in (
    "Tensorrt", "CUDA", "MIGraphX", "OpenVINO", "Dnnl", "VitisAI", "QNN", "Nnapi", "VSINPU", "Js", "CoreML",
    "Dml", "Rknpu", "WebNN", "WebGpu", "Xnnpack", "CANN", "Azure", "CPU", "ROCM")}


def is_gpu(provider: str) -> bool:
    return provider in GPU_EPS or provider in GPU_TORCH


def fix_for(provider: str) -> str:
    """How to make ``provider`` available, in one phrase."""
    if provider in GPU_TORCH:
        return "a CUDA build of torch (action: torch-build default, or python-path with a CUDA torch)"
    dist = GPU_EPS[provider].distribution if provider in GPU_EPS else "onnxruntime"
    action = " (action input onnxruntime: gpu)" if dist == "onnxruntime-gpu" else ""
    return f"{dist} instead of onnxruntime{action}"


def kind_of(name: str) -> Kind:
    return TORCH.get(name, ONNXRUNTIME)


def canonical_provider(name: str) -> str:
    """The canonical provider name for ``name`` (aliases and the EPs the gate knows folded,
    case-insensitively: `CpuExecutionProvider` is the CPU EP, never an absent one that skips its check)."""
    alias = ALIASES.get(name.lower()) or KNOWN_EPS.get(name.lower())
    if name in TORCH or (alias is None and name.endswith("ExecutionProvider")):
        return name
    if alias is None:
        known = ", ".join(sorted(set(TORCH) | set(ALIASES)))
        raise ConfigError(f"unknown provider `{name}`: use `torch-cpu`, `torch-cuda`, an ONNX Runtime EP "
                          f"name (e.g. `CPUExecutionProvider`) or an alias ({known})")
    return alias
