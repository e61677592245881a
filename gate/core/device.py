"""Device classes: the hardware a provider's numerics depend on: the machine architecture plus the
widest vector ISA ONNX Runtime's kernels use (``x86_64-avx2``), or the GPU's
(``cuda-sm90-NVIDIA_H100_80GB_HBM3``). No torch or onnxruntime here.
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path


def _cpuinfo(*prefixes: str) -> str | None:
    """The value of the first line of /proc/cpuinfo that starts with one of ``prefixes``."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    return next((line.split(":", 1)[1] for line in text.splitlines() if line.startswith(prefixes)), None)


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    return frozenset((_cpuinfo("flags", "Features") or "").split())


@functools.lru_cache(maxsize=1)
def cpu_class() -> str:
    machine = platform.machine().lower() or "unknown"
    flags = cpu_flags()
    if machine in ("x86_64", "amd64"):
        for isa, name in (("avx512f", "avx512"), ("avx2", "avx2"), ("avx", "avx")):
            if isa in flags:
                return f"x86_64-{name}"
        return "x86_64"
    return machine


@functools.lru_cache(maxsize=1)
def cpu_name() -> str:
    name = _cpuinfo("model name")
    return name.strip() if name is not None else (platform.processor() or platform.machine())


def cuda_class(name: str, capability: tuple[int, int]) -> str:
    return f"cuda-sm{capability[0]}{capability[1]}-{name.replace(' ', '_')}"


GPU = "gpu"  # an ONNX Runtime GPU EP before it reports its device
GPU_CLASS_PREFIXES = (GPU, "cuda")  # the device classes of GPUs (``cuda_class``, ``GPU``)


def is_gpu_class(device_class: str) -> bool:
    return device_class.startswith(GPU_CLASS_PREFIXES)


def machine() -> dict[str, str]:
    return {"platform": f"{platform.system()}-{platform.machine()}", "cpu": cpu_name(),
            "python": platform.python_version()}
