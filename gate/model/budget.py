"""The memory a model will need, known before it is built: the factory runs once on the ``meta``
device to count its parameter and buffer bytes, and a check's peak is a multiple of those. Above the
budget (``[isolation] memory-budget-mb``, else the machine's memory) the model fails at once, with
what it needs, instead of being killed minutes later; so do declared inputs whose bytes alone exceed it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch

from gate.config import ModelSpec
from gate.core.failure import ModelError
from gate.core.refs import resolve
from gate.core.status import ErrorStatus
from gate.model.inputs import nbytes

MB = 10**6
FIXED_MB = 1000  # torch, ONNX Runtime and the exporter loaded, before any weights
# Peak bytes per byte of float32 weights (measured on the synthetic family, scripts/bench_scale.py):
PROCESS_COPIES = 1.1  # in the largest single process (2.4 GB synthetic: 3.3 GB, the ONNX Runtime worker)
TREE_COPIES = 2.2  # the gate and its worker together, at the same time (2.4 GB synthetic: 5.8 GB)

def machine_mb() -> int | None:
    """Physical memory (Linux and macOS); None where it cannot be read."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // MB
    except (ValueError, OSError, AttributeError):
        return None


def available_mb() -> int | None:
    """Memory available to start something now (Linux ``MemAvailable``); None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 // MB
    except (OSError, ValueError, IndexError):
        return None
    return None


def weight_bytes(spec: ModelSpec, root: Path) -> int | None:
    """Bytes of the model's parameters and buffers, from a build on the meta device; None when the
    factory cannot build there (it then builds for real, and nothing is known in advance), when it has
    lazy modules, and for a sweep's case (one operator or layer: small by construction)."""
    if spec.sweep is not None:
        return None
    factory = resolve(spec.factory, root, f"{spec.where}.factory", spec.name)
    torch.manual_seed(spec.factory_seed if spec.factory_seed is not None else spec.seed)
    try:
        with torch.device("meta"):
            module = factory()
        tensors = list(module.parameters()) + list(module.buffers())
    except (Exception, SystemExit):  # noqa: BLE001 - needs real storage: no early estimate (one that exits
        return None  # says so when it builds for real)
    if not isinstance(module, torch.nn.Module) or any(torch.nn.parameter.is_lazy(t) for t in tensors):
        return None  # lazy modules: their sizes exist only after a forward
    return tensor_bytes(tensors)


def tensor_bytes(tensors: list[torch.Tensor]) -> int:
    """Bytes of ``tensors``, each counted once however often it is listed (tied weights)."""
    return sum(t.numel() * t.element_size() for t in {id(t): t for t in tensors}.values())


def check(spec: ModelSpec, root: Path, budget_mb: int | None) -> None:
    """ModelError (BUILD_FAIL, exit 3) when the model will not fit: one process against
    ``memory-budget-mb`` when set, else the whole run against the machine's memory."""
    limit = budget_mb or machine_mb()
    if not limit:
        return
    weights = weight_bytes(spec, root)
    if weights is None:
        return
    copies, where = ((PROCESS_COPIES, "[isolation] memory-budget-mb") if budget_mb
                     else (TREE_COPIES, "this machine's memory"))
    need = int(FIXED_MB + copies * weights / MB)
    if need > limit:
        raise ModelError(f"model `{spec.name}`: needs about {need:,} MB of memory ({weights / MB:,.0f} MB of weights), "
                         f"more than {where} ({limit:,} MB)", ErrorStatus.BUILD_FAIL)


def check_inputs(spec: ModelSpec, budget_mb: int | None) -> None:
    """ModelError (BUILD_FAIL) when the declared inputs alone will not fit, as ``check`` judges weights:
    their bytes are known before any is drawn, so ``validate`` and ``check`` refuse them alike."""
    limit = budget_mb or machine_mb()
    if not isinstance(spec.inputs, tuple) or not limit:
        return
    sizes = [nbytes(i) for i in spec.inputs]
    need = FIXED_MB + math.ceil(sum(sizes) / MB)
    if need > limit:
        k = max(range(len(sizes)), key=sizes.__getitem__)
        where = "[isolation] memory-budget-mb" if budget_mb else "this machine's memory"
        key, largest = f"{spec.where}.inputs[{k + 1}].shape", spec.inputs[k]
        raise ModelError(f"model `{spec.name}`: `{key}`: {list(largest.shape)} of {largest.dtype} is "
                         f"{sizes[k] / MB:,.0f} MB: with its inputs the model needs about "
                         f"{need:,} MB of memory, more than {where} ({limit:,} MB)", ErrorStatus.BUILD_FAIL)
