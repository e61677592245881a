"""The float64 reference: the model's own PyTorch code on CPU, in float64 throughout, every
module call fingerprinted. Its run-to-run noise is ~1e-16, so any drift against its baseline
is a change of the model. Casts the model makes to float32/float16/bfloat16 are promoted
(``promotion``); what still ran below float64 is recorded per layer. A model that cannot run
in float64 falls back to float32, and says so."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from gate.core.failure import ModelError
from gate.core.names import bad_name, quote
from gate.core.progress import DETAIL, DETAIL_EVERY_S
from gate.core.status import ErrorStatus
from gate.model import torch_hooks
from gate.model.build import BuiltModel
from gate.model.torch_hooks import LayerOutput
from gate.runners.gradients import gradients
from gate.runners.promotion import Notes, promoted
from gate.runners.widen import float64_weights


@dataclass
class Reference:
    dtype: str  # "float64", or "float32" when the model cannot run in float64
    records: list[LayerOutput]
    notes: Notes
    outputs: list[np.ndarray] = field(default_factory=list)  # the model's outputs, for exact metrics
    gradients: list[LayerOutput] = field(default_factory=list)  # ``grad:<parameter>``, with ``gradients = true``


def as_float64(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]):
    ref = copy.deepcopy(module).double()
    return ref, tuple(t.double() if t.is_floating_point() else t for t in inputs)


def _capture(module: torch.nn.Module, inputs, promote: bool, detail: Callable[[str], None] | None = None,
             tick: Callable[[], None] | None = None) -> tuple[list[LayerOutput], Notes, list[np.ndarray]]:
    notes = Notes()
    last = [time.perf_counter()]

    def stamp(record: LayerOutput, tensor: torch.Tensor) -> None:
        record.reached = notes.reached  # the coarsest precision computed up to this layer
        record.data_dependent = notes.shapes.holds(tensor)
        if tick is not None:
            tick()
        if detail is not None and time.perf_counter() - last[0] >= DETAIL_EVERY_S:
            last[0] = time.perf_counter()
            detail(f"{DETAIL}{record.name}")

    capture = torch_hooks.Capture(module, on_record=stamp)
    records = capture.run(inputs, promoted(notes, capture.where, promote))
    outputs = [torch_hooks.to_numpy(t).astype(np.float64) for _, t in torch_hooks.flatten(capture.output)]
    return records, notes, outputs


def own_apply(module: torch.nn.Module) -> str | None:
    """The first module class with its own ``_apply``: it says itself what ``.double()`` involves (a
    cache cleared, a plain tensor converted), which widening the weights alone would skip."""
    return next((type(m).__name__ for m in module.modules() if type(m)._apply is not torch.nn.Module._apply), None)


def _float64(built: BuiltModel, promote: bool, detail: Callable[[str], None],
             tick: Callable[[], None] | None) -> tuple[list[LayerOutput], Notes, list[np.ndarray]]:
    """The float64 run, each module widened as it runs; a model with its own ``_apply``, or one that
    reads another module's weights outside its call, runs on a ``.double()`` copy instead."""
    inputs = tuple(t.double() if t.is_floating_point() else t for t in built.inputs)
    if own_apply(built.module) is None:
        try:
            with float64_weights(built.module):
                return _capture(built.module, inputs, promote, detail, tick)
        except Exception:  # noqa: BLE001 - mixed dtypes from weights read across modules: use the copy
            built.restore()  # what the failed run cached goes before the copy
    module, inputs = as_float64(built.module, built.inputs)
    return _capture(module, inputs, promote, detail, tick)


def run_reference(built: BuiltModel, progress: Callable[[str], None], promote: bool = True,
                  tick: Callable[[], None] | None = None) -> Reference:
    """The reference's layers in execution order, with what promotion did and could not do
    (``tick``: called once per layer recorded in float64, for a parent that counts them)."""
    name = built.spec.name
    try:
        with built.fresh():
            records, notes, outputs = _float64(built, promote, progress, tick)
        if not outputs:  # nothing ships: no graph to export, no output to compare
            raise ModelError(f"model `{name}`: its forward returned no tensor", ErrorStatus.INFER_FAIL)
        # The backward pass needs float64 parameters of its own: a copy, only with `gradients = true`.
        with built.fresh():
            grads = gradients(*as_float64(built.module, built.inputs), built.spec.seed) if built.spec.gradients else []
        return _recordable(name, Reference("float64", records, notes, outputs, grads))
    except ModelError:
        raise  # the model changed its own weights: no fallback starts from the same model
    except Exception as exc:  # noqa: BLE001 - a model without float64 kernels falls back
        in_float64 = exc
    try:
        with built.fresh():
            capture = torch_hooks.Capture(built.module)
            records = capture.run(built.inputs)
            outputs = [torch_hooks.to_numpy(t).astype(np.float64) for _, t in torch_hooks.flatten(capture.output)]
        with built.fresh():
            grads = gradients(built.module, built.inputs, built.spec.seed) if built.spec.gradients else []
    except ModelError:
        raise
    except Exception as exc:  # it fails as given too: a failure of the model, not of float64
        raise ModelError.of(f"model `{name}`: PyTorch forward failed (in float64 and in float32): "
                            f"{type(exc).__name__}: {exc}", ErrorStatus.INFER_FAIL, exc) from None
    # Said only now that float32 ran: a fallback that also failed is no fallback.
    progress(f"{name}: float64 reference failed ({type(in_float64).__name__}); using float32")
    return _recordable(name, Reference("float32", records, Notes(reached="float32"), outputs, grads))


def _recordable(name: str, ref: Reference) -> Reference:
    """``ref``, where every layer name is one the files hold, and no two layers share one: a module named
    as the gate names another's call (``l2#2``), output element (``x[0]``) or gradient (``grad:w``)."""
    seen: set[str] = set()
    for layer in [*ref.records, *ref.gradients]:
        twice = (f"two layers are named {quote(layer.name)}: a module's name is the one the gate gives a "
                 "call, element or gradient of another (`#k`, `[i]`, `grad:`); rename the module")
        why = bad_name(layer.name) or (twice if layer.name in seen else None)
        if why:
            raise ModelError(f"model `{name}`: {why}", ErrorStatus.BUILD_FAIL)
        seen.add(layer.name)
    return ref


CHANGED = 1e-12  # float64 noise: above it, eval mode changed what a layer computes


def compare_as_given(built: BuiltModel, ref: Reference, promote: bool) -> dict[str, Any]:
    """Run the model as its factory returned it (some modules in training mode) and find the first
    layer whose output eval mode changed: a deployment that forgot eval() runs it that way."""
    from gate.verdict.against_reference import error_against

    with built.fresh():  # the copy starts from the model as built, not from what the reference left
        module, inputs = as_float64(built.module, built.inputs)
    left = set(built.training)
    for name, m in module.named_modules():
        m.training = (name or "(model)") in left
    try:
        as_given, _, _ = _capture(module, inputs, promote)
    except Exception:  # noqa: BLE001 - a model that fails as given changed everything
        return {"modules": built.training[:200], "changed_at": ref.records[0].name if ref.records else None,
                "change": None}
    normalized = {r.name: r.fp for r in ref.records}
    for rec in as_given:
        now = normalized.get(rec.name)
        change = None if now is None else error_against(rec.fp, now)
        if change is None or change > CHANGED or (rec.fp.nan, rec.fp.posinf) != (now.nan, now.posinf):
            return {"modules": built.training[:200], "changed_at": rec.name, "change": change}
    return {"modules": built.training[:200], "changed_at": None, "change": None}
