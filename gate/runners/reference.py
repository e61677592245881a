"""The float64 reference: the model's own PyTorch code on CPU, in float64, every module call
fingerprinted. Its run-to-run noise is ~1e-16, so any drift against its baseline is a change
of the model. A model that cannot run in float64 falls back to float32, and says so."""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch

from gate.errors import ModelError
from gate.model.build import BuiltModel
from gate.runners import torch_hooks
from gate.runners.torch_hooks import LayerOutput


def as_float64(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]):
    """A float64 copy of the model and its floating inputs."""
    ref = copy.deepcopy(module).double()
    return ref, tuple(t.double() if t.is_floating_point() else t for t in inputs)


def run_reference(built: BuiltModel, progress: Callable[[str], None]) -> tuple[str, list[LayerOutput]]:
    """(the reference dtype, its layers in execution order)."""
    name = built.spec.name
    try:
        module, inputs = as_float64(built.module, built.inputs)
        records = torch_hooks.run(module, inputs)
        del module
        return "float64", records
    except Exception as exc:  # noqa: BLE001 - a model without float64 kernels falls back
        progress(f"{name}: float64 reference failed ({type(exc).__name__}); using float32")
    try:
        return "float32", torch_hooks.run(built.module, built.inputs)
    except Exception as exc:
        raise ModelError(f"model `{name}`: PyTorch forward failed: {type(exc).__name__}: {exc}", "INFER_FAIL") from None
