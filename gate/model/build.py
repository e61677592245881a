"""Build the user's model from its factory, once, and the inputs it runs on.

The same instance is exported and run on PyTorch: a model built twice from an unseeded
factory is two different models, and every layer would "diverge" at the first conv.
The factory is also called under ``torch.manual_seed(seed)`` so random-init models are
reproducible from run to run.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gate.config import ModelSpec
from gate.errors import ConfigError, ModelError
from gate.model import inputs as inputs_mod


@dataclass
class BuiltModel:
    spec: ModelSpec
    module: torch.nn.Module
    inputs: tuple[torch.Tensor, ...]
    input_names: list[str]
    arrays: list[np.ndarray]  # the inputs for ONNX Runtime (bfloat16 widened exactly to float32)
    inputs_digest: str
    weights_digest: str


def resolve(ref: str, root: Path, where: str) -> Any:
    module_name, _, attr = ref.partition(":")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure is the user's module
        raise ConfigError(f"`{where}`: cannot import `{module_name}` ({type(exc).__name__}: {exc})") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"`{where}`: module `{module_name}` has no attribute `{attr}`") from None


@contextlib.contextmanager
def inference_mode():
    """No autograd, and no MultiheadAttention fast path (its fused op does not export and
    would make PyTorch run a different kernel than the one exported)."""
    previous = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(previous)


def build(spec: ModelSpec, root: Path) -> BuiltModel:
    factory = resolve(spec.factory, root, f"{spec.where}.factory")
    torch.manual_seed(spec.seed)
    try:
        module = factory()
    except Exception as exc:
        raise ModelError(f"model `{spec.name}`: factory `{spec.factory}` raised {type(exc).__name__}: {exc}",
                         "BUILD_FAIL") from None
    if not isinstance(module, torch.nn.Module):
        raise ConfigError(
            f"`{spec.where}.factory`: `{spec.factory}` returned {type(module).__name__}, not a torch.nn.Module"
        )
    module.eval()
    tensors, names = _inputs(spec, root)
    arrays = [t.detach().cpu().float().numpy() if t.dtype == torch.bfloat16 else t.detach().cpu().numpy()
              for t in tensors]
    return BuiltModel(spec, module, tensors, names, arrays, inputs_mod.digest(names, arrays), weights_digest(module))


def _inputs(spec: ModelSpec, root: Path) -> tuple[tuple[torch.Tensor, ...], list[str]]:
    if isinstance(spec.inputs, str) and spec.inputs.endswith(".npz"):
        tensors, names = _npz_inputs(spec)
    elif isinstance(spec.inputs, str):
        fn = resolve(spec.inputs, root, f"{spec.where}.inputs")
        try:
            produced = fn(spec.seed)
        except Exception as exc:
            raise ModelError(f"model `{spec.name}`: inputs `{spec.inputs}` raised {type(exc).__name__}: {exc}",
                             "BUILD_FAIL") from None
        if isinstance(produced, torch.Tensor):
            produced = (produced,)
        if not isinstance(produced, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in produced):
            raise ConfigError(f"`{spec.where}.inputs`: `{spec.inputs}` must return a tuple of tensors")
        tensors, names = tuple(produced), [f"input_{i}" for i in range(len(produced))]
    else:
        arrays = inputs_mod.generate(spec.inputs, spec.seed)
        tensors = tuple(torch.from_numpy(a).to(torch.bfloat16) if s.dtype == "bfloat16" else torch.from_numpy(a)
                        for s, a in zip(spec.inputs, arrays, strict=True))
        names = [s.name for s in spec.inputs]
    # Inputs are checked before use: a NaN going in would be blamed on the first layer.
    for name, t in zip(names, tensors, strict=True):
        if t.is_floating_point() and not torch.isfinite(t).all():
            raise ModelError(f"model `{spec.name}`: input `{name}` contains NaN/Inf", "BUILD_FAIL")
    return tensors, names


def _npz_inputs(spec: ModelSpec) -> tuple[tuple[torch.Tensor, ...], list[str]]:
    """User-supplied real inputs: arrays of an .npz file, in the file's order (no pickles)."""
    try:
        with np.load(spec.inputs, allow_pickle=False) as npz:
            names = list(npz.files)
            arrays = [npz[n] for n in names]
    except (OSError, ValueError) as exc:
        raise ConfigError(f"`{spec.where}.inputs`: cannot read `{spec.inputs}` ({exc})") from None
    if not arrays:
        raise ConfigError(f"`{spec.where}.inputs`: `{spec.inputs}` holds no arrays")
    return tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays), names


def weights_digest(module: torch.nn.Module) -> str:
    """sha256 over the state dict (names, dtypes, shapes, bytes), in name order."""
    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        if t.dtype == torch.bfloat16:
            t = t.view(torch.int16)
        h.update(np.ascontiguousarray(t.numpy()).tobytes())
    return h.hexdigest()
