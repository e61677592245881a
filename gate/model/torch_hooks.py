"""Fingerprint every module call of a PyTorch forward: hooks on every module (containers and the root
included) fingerprint each output at once, before a later in-place op can overwrite it, and drop the
tensor, so memory does not grow with the number of layers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch

from gate.core.layers import ROOT, layer_name
from gate.fingerprint import Fingerprint
from gate.model.build import inference_mode, unshared
from gate.model.torch_fingerprint import fingerprint_of, to_numpy

__all__ = ["CallSpecs", "Capture", "LayerOutput", "flatten", "hooked", "outputs", "run", "to_numpy"]

_PLAIN = (torch.Tensor, str, int, float, bool, type(None))


@dataclasses.dataclass
class LayerOutput:
    """One module call's output element, as captured."""

    name: str  # "layer1.0.conv1", "act#2", "attn[0]", "(model)[1]"
    module: str  # qualified module name ("" for the root)
    call: int  # 0-based call index of that module in one forward
    element: str  # "" or the tuple/dict suffix, e.g. "[0]"
    type: str  # module class name
    fp: Fingerprint
    alias_of: str | None = None  # an identity module: its output is this earlier layer's tensor
    reached: str = "float64"  # the reference's coarsest precision up to this layer (see promotion)
    data_dependent: bool = False  # its shape depends on values (the reference's watch, data_dependence)
    integer: bool = False  # integer or bool values (ids, a mask): no rounding moves them


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    """Tensors of a (nested) output with stable suffixes: ``[0]``, ``[key]``, ``[0][1]``."""
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from flatten(item, f"{prefix}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from flatten(item, f"{prefix}[{key}]")
    elif hasattr(value, "to_tuple") and callable(value.to_tuple):  # transformers ModelOutput
        yield from flatten(dict(value.items()), prefix)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):  # its fields in order, as exported
        yield from flatten({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, prefix)
    elif not isinstance(value, (str, bytes, int, float, bool, type(None))):  # a container pytree knows
        leaves, spec = torch.utils._pytree.tree_flatten(value)
        if not spec.is_leaf():
            yield from flatten(leaves, prefix)


def hooked(module: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """``module``'s named modules that forward hooks can see: never a ScriptModule (it refuses them)
    nor one it holds (TorchScript calls it, not Python); their outputs are seen where they are used."""
    inside = {id(s) for m in module.modules() if isinstance(m, torch.jit.ScriptModule) for s in m.modules()}
    return [(qual, m) for qual, m in module.named_modules() if id(m) not in inside]


def outputs(module: torch.nn.Module, value: Any) -> list[LayerOutput]:
    """The root's outputs only (what a compiled model exposes)."""
    return [LayerOutput(layer_name("", 0, element), "", 0, element, type(module).__name__, fingerprint_of(t))
            for element, t in flatten(value)]


class CallSpecs:
    """Which modules ``torch.export`` can record the call signature of
    (``gate.export.signatures``): those whose every call in one forward took and returned only
    tensors and plain scalars, with one structure across calls. A recorded call takes and gives copies
    of its containers, rebuilt by pytree: only where the copy holds the very tensors (a KV cache's rebuild
    concatenates) and the call leaves the containers it was given as they were (what it adds to a cache
    would reach neither its caller nor the model's outputs) is the program the one a plain export traces.
    Fed by that forward's hooks."""

    def __init__(self) -> None:
        self._specs: dict[str, list[Any]] = {}  # per module: its (args, kwargs) structure, its output's
        self._refused: set[str] = set()
        self._given: dict[str, list[Any]] = {}  # per module, per running call: what it was given

    def _check(self, qual: str, which: int, value: Any) -> None:
        leaves, spec = torch.utils._pytree.tree_flatten(value)
        seen = self._specs.setdefault(qual, [None, None])
        if not all(isinstance(x, _PLAIN) for x in leaves) or seen[which] not in (None, spec) or \
                not _rebuilt_as_is(leaves, spec):
            self._refused.add(qual)
        seen[which] = spec

    def _enter(self, qual: str, given: Any) -> None:
        self._check(qual, 0, given)
        self._given.setdefault(qual, []).append(_contents(given))

    def _exit(self, qual: str, given: Any, out: Any) -> None:
        if self._given[qual].pop() != _contents(given):  # it changed a container it was given
            self._refused.add(qual)
        self._check(qual, 1, out)

    def hooks(self, module: torch.nn.Module) -> list[Any]:
        """Hooks on every module but the root, for one forward; the caller removes them."""
        handles = []
        for qual, m in hooked(module):
            if qual:
                handles.append(m.register_forward_pre_hook(
                    lambda _m, args, kwargs, q=qual: self._enter(q, (args, kwargs)), with_kwargs=True))
                handles.append(m.register_forward_hook(
                    lambda _m, args, kwargs, out, q=qual: self._exit(q, (args, kwargs), out),
                    with_kwargs=True))
        return handles

    def recordable(self) -> tuple[str, ...]:
        """The modules whose signature can be recorded, in the order they were first called."""
        return tuple(q for q in self._specs if q not in self._refused)


def _rebuilt_as_is(leaves: list[Any], spec: Any) -> bool:
    """Whether pytree rebuilds the value from ``leaves`` holding those very objects."""
    try:
        with _own_work():  # a rebuild's operations are not the model's
            again = torch.utils._pytree.tree_leaves(torch.utils._pytree.tree_unflatten(leaves, spec))
    except Exception:  # noqa: BLE001 - a container that cannot be rebuilt cannot be recorded either
        return False
    return [id(x) for x in again] == [id(x) for x in leaves]


def _contents(value: Any) -> tuple[Any, list[int]]:
    """A value's structure and which objects fill it: another after a call that changed it in place."""
    leaves, spec = torch.utils._pytree.tree_flatten(value)
    return spec, [id(x) for x in leaves]


class Capture:
    """One forward of ``module`` with hooks on every module call. ``where()`` names the innermost
    module call running (for what happens inside a forward: casts, low-precision ops), and
    ``on_record`` sees each record as it is made, with the tensor it was made of."""

    def __init__(self, module: torch.nn.Module,
                 on_record: Callable[[LayerOutput, torch.Tensor], None] | None = None,
                 specs: CallSpecs | None = None):
        self.module, self.on_record, self.specs = module, on_record, specs
        self.records: list[LayerOutput] = []
        self._calls: dict[str, int] = {}
        self._stack: list[str] = []
        # id(tensor) -> (weakref, version, layer): an identity module (Dropout in eval, Identity)
        # returns the very tensor it got, unchanged; in-place modules return it with a new version.
        self._produced: dict[int, tuple[weakref.ref[Any], int, str]] = {}
        self.output: Any = None  # what the forward returned
        self.on_enter: Callable[[str, str], None] | None = None  # (the call running, the module it calls)

    def where(self) -> str:
        return self._stack[-1] if self._stack else ROOT

    def _enter(self, qual: str) -> None:
        if self.on_enter is not None and qual:
            self.on_enter(self.where(), qual)
        self._stack.append(layer_name(qual, self._calls.get(qual, 0)))

    def _exit(self, mod: torch.nn.Module, output: Any, qual: str) -> None:
        call = self._calls.get(qual, 0)
        self._calls[qual] = call + 1
        if self._stack:
            self._stack.pop()
        for element, tensor in flatten(output):
            name = layer_name(qual, call, element)
            alias = None
            seen = self._produced.get(id(tensor))
            if seen is not None and seen[0]() is tensor and seen[1] == tensor._version:
                alias = seen[2]
            else:
                self._produced[id(tensor)] = (weakref.ref(tensor), tensor._version, name)
            with _own_work():
                fp = fingerprint_of(tensor)
            record = LayerOutput(name, qual, call, element, type(mod).__name__, fp, alias,
                                 integer=not (tensor.is_floating_point() or tensor.is_complex()))
            self.records.append(record)
            if self.on_record is not None:
                self.on_record(record, tensor)

    def run(self, inputs: tuple[torch.Tensor, ...],
            context: contextlib.AbstractContextManager[Any] | None = None) -> list[LayerOutput]:
        """The records in execution (hook completion) order."""
        handles = self.specs.hooks(self.module) if self.specs is not None else []
        for qual, m in hooked(self.module):
            handles.append(m.register_forward_pre_hook(lambda _m, _args, q=qual: self._enter(q)))
            if qual:
                handles.append(m.register_forward_hook(lambda mod, _a, out, q=qual: self._exit(mod, out, q)))
        try:
            with inference_mode(), context or contextlib.nullcontext():
                self.output = self.module(*unshared(inputs))
                # the outputs as returned, whatever hooks run after ours (one the forward adds) make of them
                self._exit(self.module, self.output, "")
        finally:
            for h in handles:
                h.remove()
        return self.records


@contextlib.contextmanager
def _own_work() -> Iterator[None]:
    """The capture's own tensor work (detach, widen, to NumPy) is not the model's: no torch
    function or dispatch mode of the run (see ``promotion``) sees it."""
    from torch.utils._python_dispatch import _disable_current_modes

    with torch._C.DisableTorchFunction(), _disable_current_modes():
        yield


def run(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[LayerOutput]:
    """One forward with hooks; returns the records in execution (hook completion) order."""
    return Capture(module).run(inputs)

