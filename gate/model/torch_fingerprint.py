"""Which fingerprint path a captured tensor takes, by its device: CPU tensors go to the native kernel
through a NumPy view (no copy), CUDA tensors through torch ops on the GPU (only the fingerprint comes
back), anything else through a copy to the host (other devices, the GPU out of memory for the sort,
``PARITY_GATE_DEVICE_FINGERPRINT=host``). Both paths widen alike (bfloat16 exactly to float32), so a
baseline does not change with the path that made it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from gate import env
from gate.fingerprint import Fingerprint, fingerprint
from gate.fingerprint.torch_ops import fingerprint_tensor

ON_DEVICE = ("cuda",)  # device types whose tensors are fingerprinted where they live


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A NumPy view of a tensor for fingerprinting (bfloat16 widened exactly; ints/bools as float64),
    copied to the host before it is widened."""
    return _widened(t.detach().cpu()).numpy()


def on_host(t: torch.Tensor) -> Fingerprint:
    """Copy to the host (when not there already) and fingerprint with the selected backend."""
    return fingerprint(to_numpy(t))


def _widened(t: torch.Tensor) -> torch.Tensor:
    """The tensor as fingerprinted: floating, bfloat16 widened exactly, on its own device."""
    t = t.detach()
    if t.dtype == torch.bfloat16:
        return t.float()
    if t.is_floating_point():
        return t
    if t.is_complex():
        return torch.view_as_real(t)
    return t.to(torch.float64)


def on_device(t: torch.Tensor) -> Fingerprint:
    """Fingerprint with torch ops where ``t`` lives; the host copy when the device runs out of memory."""
    try:
        return fingerprint_tensor(_widened(t))
    except torch.cuda.OutOfMemoryError:  # the same class as torch.OutOfMemoryError, also in older torch
        return on_host(t)


def device_fingerprinter(device: torch.device | str) -> Callable[[torch.Tensor], Fingerprint]:
    """How tensors on ``device`` are fingerprinted: ``on_device`` for CUDA (unless the environment
    asks for the host path), ``on_host`` for everything else."""
    kind = torch.device(device).type
    return on_device if kind in ON_DEVICE and env.device_fingerprint() == "device" else on_host


def fingerprint_of(t: torch.Tensor) -> Fingerprint:
    return device_fingerprinter(t.device)(t)
