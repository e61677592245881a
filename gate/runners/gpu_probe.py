"""The NVIDIA GPU an ONNX Runtime EP runs on, without torch: a device class named like torch's
(``cuda-sm90-NVIDIA_H100_80GB_HBM3``), asked of ``nvidia-smi`` first, then of NVML through ctypes, for
the EP's ``device_id`` as CUDA counts it under ``CUDA_VISIBLE_DEVICES``. When neither answers, the
class is the generic ``gpu`` and the reason says why."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import shutil
import subprocess
from dataclasses import dataclass

from gate import env
from gate.core import device


@dataclass(frozen=True)
class Gpu:
    name: str
    capability: tuple[int, int]

    @property
    def device_class(self) -> str:
        return device.cuda_class(self.name, self.capability)


@dataclass(frozen=True)
class Probe:
    device_class: str
    reason: str | None = None  # why the class is the generic one


def parse_nvidia_smi(text: str) -> list[Gpu]:
    """``NVIDIA H100 80GB HBM3, 9.0`` per line -> GPUs in index order (ValueError naming a bad line)."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name, sep, cap = line.rpartition(",")
        major, dot, minor = cap.strip().partition(".")
        if not sep or not dot or not major.isdigit() or not minor.isdigit() or not name.strip():
            raise ValueError(f"unexpected nvidia-smi line {line.strip()!r} (expected `<name>, <major>.<minor>`)")
        gpus.append(Gpu(name.strip(), (int(major), int(minor))))
    return gpus


def physical_index(device_id: int, visible: str | None) -> int | None:
    """The nvidia-smi index of CUDA device ``device_id`` under ``CUDA_VISIBLE_DEVICES`` (None: the
    variable names devices by UUID or MIG instance, which this does not resolve)."""
    if visible is None or not visible.strip():
        return device_id
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if device_id >= len(entries) or not entries[device_id].isdigit():
        return None
    return int(entries[device_id])


def _nvidia_smi() -> tuple[list[Gpu], str | None]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return [], "nvidia-smi is not on the PATH"
    try:
        proc = subprocess.run([exe, "--query-gpu=name,compute_cap", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], f"nvidia-smi failed ({type(exc).__name__})"
    if proc.returncode != 0:
        return [], f"nvidia-smi exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:200]}"
    try:
        return parse_nvidia_smi(proc.stdout), None
    except ValueError as exc:
        return [], str(exc)


def _nvml() -> tuple[list[Gpu], str | None]:
    path = ctypes.util.find_library("nvidia-ml") or "libnvidia-ml.so.1"
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return [], "libnvidia-ml is not loadable"
    if lib.nvmlInit_v2() != 0:
        return [], "nvmlInit failed"
    try:
        count = ctypes.c_uint()
        if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return [], "nvmlDeviceGetCount failed"
        gpus = []
        for i in range(count.value):
            handle, name = ctypes.c_void_p(), ctypes.create_string_buffer(96)
            major, minor = ctypes.c_int(), ctypes.c_int()
            if (lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) != 0
                    or lib.nvmlDeviceGetName(handle, name, 96) != 0
                    or lib.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor)) != 0):
                return [], f"NVML could not describe device {i}"
            gpus.append(Gpu(name.value.decode(errors="replace"), (major.value, minor.value)))
        return gpus, None
    finally:
        lib.nvmlShutdown()


@functools.lru_cache(maxsize=1)
def nvidia_gpus() -> tuple[tuple[Gpu, ...], str | None]:
    """Every NVIDIA GPU in nvidia-smi's order, or () and why not."""
    gpus, why = _nvidia_smi()
    if gpus:
        return tuple(gpus), None
    more, why_nvml = _nvml()
    if more:
        return tuple(more), None
    return (), f"{why}; {why_nvml}" if why else why_nvml


def cuda_probe(device_id: int = 0) -> Probe:
    """The device class of CUDA device ``device_id`` as the ONNX Runtime CUDA/TensorRT EPs number it."""
    gpus, why = nvidia_gpus()
    if not gpus:
        return Probe(device.GPU, f"no NVIDIA GPU found ({why})")
    index = physical_index(device_id, env.cuda_visible_devices())
    if index is None or index >= len(gpus):
        return Probe(device.GPU, f"device_id {device_id} is not one of the {len(gpus)} NVIDIA GPU(s) nvidia-smi lists "
                     f"({env.CUDA_VISIBLE_DEVICES}={env.cuda_visible_devices() or ''!r})")
    return Probe(gpus[index].device_class)
