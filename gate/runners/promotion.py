"""A float64 reference that is float64 throughout.

Model code often computes in float32 on purpose (RMSNorm and softmax in Llama-style decoders,
autocast regions); run as written, the "float64" reference carries float32 rounding (~1e-7) that hides
the changes it exists to see. ``promoted`` makes every float32/float16/bfloat16 *target* float64
(``dtype=``, ``to``/``type``, ``.float()`` and kin, the default dtype, autocast entered disabled),
counted per module call. A dispatch-level watch records what still computed below float64 (a custom
op, a NumPy round trip) and which tensors have value-dependent shapes (``data_dependence``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from gate.core.target import coarsest
from gate.model.dispatch import DispatchMode
from gate.runners.data_dependence import Shapes

LOW = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_NARROWING = {torch.Tensor.float, torch.Tensor.half, torch.Tensor.bfloat16}
_TYPE_NAMES = ("torch.FloatTensor", "torch.HalfTensor", "torch.BFloat16Tensor", "float", "half", "bfloat16")
_BELOW_FLOAT32 = {torch.float16, torch.bfloat16, torch.Tensor.half, torch.Tensor.bfloat16, "torch.HalfTensor",
                  "torch.BFloat16Tensor", "half", "bfloat16"}
@dataclass
class Notes:
    """What the promotion did and what it could not do, by module call."""

    promoted: dict[str, int] = field(default_factory=dict)  # casts to a lower float dtype made float64
    narrowed: dict[str, int] = field(default_factory=dict)  # of those, the casts below float32
    below: dict[str, str] = field(default_factory=dict)  # computed below float64 anyway: the coarsest dtype
    reached: str = "float64"  # coarsest precision computed so far in the run (the layers after inherit it)
    shapes: Shapes = field(default_factory=Shapes)  # tensors whose shape depends on values

    def count(self, where: str, dtype: Any) -> None:
        """A cast to ``dtype`` (a torch dtype, or a type name) made float64 at ``where``."""
        self.promoted[where] = self.promoted.get(where, 0) + 1
        if dtype in _BELOW_FLOAT32:
            self.narrowed[where] = self.narrowed.get(where, 0) + 1

    def saw(self, where: str, dtype: str) -> None:
        self.below[where] = coarsest(self.below.get(where, "float64"), dtype)
        self.reached = coarsest(self.reached, dtype)

    def __reduce__(self) -> tuple[type[Notes], tuple[dict[str, int], dict[str, int], dict[str, str], str]]:
        # To another process (``gate.runners.forked``): the shapes watch tensors there.
        return (Notes, (self.promoted, self.narrowed, self.below, self.reached))


def _promote_args(args: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
    """The arguments with each float target made float64, and the target replaced (None: none)."""
    out: list[Any] = []
    target: Any = None
    for a in args:
        if isinstance(a, torch.dtype) and a in LOW:
            a, target = torch.float64, a
        elif isinstance(a, str) and a in _TYPE_NAMES:
            a, target = "torch.DoubleTensor", a
        out.append(a)
    return tuple(out), target


class _Promote(TorchFunctionMode):
    def __init__(self, notes: Notes, where: Callable[[], str]):
        super().__init__()
        self.notes, self.where = notes, where

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        target = None
        if kwargs.get("dtype") in LOW:
            kwargs, target = {**kwargs, "dtype": torch.float64}, kwargs["dtype"]
        if func in _NARROWING:
            func, target = torch.Tensor.double, func
        elif func in (torch.Tensor.to, torch.Tensor.type):
            args, moved = _promote_args(tuple(args))
            target = moved if moved is not None else target
        if target is not None:
            self.notes.count(self.where(), target)
        return func(*args, **kwargs)


class _Watch(DispatchMode):
    def __init__(self, notes: Notes, where: Callable[[], str]):
        super().__init__()
        self.notes, self.where = notes, where

    def dispatch(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.dtype in LOW:
                self.notes.saw(self.where(), LOW[t.dtype])
        self.notes.shapes.saw(func, args, kwargs or {}, out)
        return out


@contextlib.contextmanager
def _autocast_disabled(notes: Notes, where: Callable[[], str]) -> Iterator[None]:
    """Autocast regions are entered disabled (autocast does not show itself to function modes)."""
    cls = torch.amp.autocast_mode.autocast
    enter = cls.__enter__

    def disabled_enter(self):
        if self._enabled and self.fast_dtype in LOW:
            notes.count(where(), self.fast_dtype)
        self._enabled = False
        return enter(self)

    cls.__enter__ = disabled_enter
    try:
        yield
    finally:
        cls.__enter__ = enter


@contextlib.contextmanager
def promoted(notes: Notes, where: Callable[[], str], promote: bool = True) -> Iterator[None]:
    """The reference run's context: promotion (unless ``promote`` is False) and the watch."""
    default = torch.get_default_dtype()
    with contextlib.ExitStack() as stack:
        if promote:
            torch.set_default_dtype(torch.float64)
            stack.callback(torch.set_default_dtype, default)
            stack.enter_context(_autocast_disabled(notes, where))
            stack.enter_context(_Promote(notes, where))
        stack.enter_context(_Watch(notes, where))
        yield
