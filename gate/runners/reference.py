"""The float64 reference: the model's own PyTorch code on CPU, in float64 throughout, every
module call fingerprinted. Its run-to-run noise is ~1e-16, so any drift against its baseline
is a change of the model. Casts the model makes to float32/float16/bfloat16 are promoted
(``promotion``); what still ran below float64 is recorded per layer. A model that cannot run
in float64 falls back to float32, and says so."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch

from gate.errors import ModelError
from gate.model.build import BuiltModel
from gate.runners import torch_hooks
from gate.runners.promotion import Notes, promoted
from gate.runners.torch_hooks import LayerOutput


@dataclass
class Reference:
    dtype: str  # "float64", or "float32" when the model cannot run in float64
    records: list[LayerOutput]
    notes: Notes


def as_float64(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]):
    """A float64 copy of the model and its floating inputs."""
    ref = copy.deepcopy(module).double()
    return ref, tuple(t.double() if t.is_floating_point() else t for t in inputs)


def _capture(module: torch.nn.Module, inputs, promote: bool) -> tuple[list[LayerOutput], Notes]:
    notes = Notes()

    def stamp(record: LayerOutput) -> None:
        record.reached = notes.reached  # the coarsest precision computed up to this layer

    capture = torch_hooks.Capture(module, on_record=stamp)
    return capture.run(inputs, promoted(notes, capture.where, promote)), notes


def run_reference(built: BuiltModel, progress: Callable[[str], None], promote: bool = True) -> Reference:
    """The reference's layers in execution order, with what promotion did and could not do."""
    name = built.spec.name
    try:
        module, inputs = as_float64(built.module, built.inputs)
        records, notes = _capture(module, inputs, promote)
        del module
        return Reference("float64", records, notes)
    except Exception as exc:  # noqa: BLE001 - a model without float64 kernels falls back
        progress(f"{name}: float64 reference failed ({type(exc).__name__}); using float32")
    try:
        return Reference("float32", torch_hooks.run(built.module, built.inputs), Notes(reached="float32"))
    except Exception as exc:
        raise ModelError(f"model `{name}`: PyTorch forward failed: {type(exc).__name__}: {exc}", "INFER_FAIL") from None
