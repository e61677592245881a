"""Which tensors of the reference run have a shape that depends on values.

An operation whose output size depends on the values it reads (``nonzero``, a boolean mask,
``unique``, NMS) starts a data-dependent tensor, and everything computed from one is one too. Such a
layer keeps a different number of elements in float32 than in float64, so it is judged by
``gate.verdict.data_dependent``, never by its shape. A size read through ``.item()`` is not followed:
``update-baseline`` recognises those layers from the runs (the float32 and float64 shapes differ)."""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch.utils._pytree import tree_leaves
from torch.utils.weak import WeakIdKeyDictionary

# Custom operators with a data-dependent output size that carry no tag saying so.
UNTAGGED = frozenset({"torchvision::nms"})
_MASKS = (torch.bool, torch.uint8)
_NEVER, _ALWAYS, _MASKED = 0, 1, 2


@functools.cache  # worked out once per operator
def _kind(func: object) -> int:
    name = func.name() if hasattr(func, "name") else str(func)
    if name in UNTAGGED:
        return _ALWAYS
    if torch.Tag.dynamic_output_shape not in getattr(func, "tags", ()):
        return _NEVER
    return _MASKED if func is torch.ops.aten.index.Tensor else _ALWAYS


def starts(func: object, args: tuple[Any, ...]) -> bool:
    """Whether ``func`` makes an output whose size depends on its inputs' values."""
    kind = _kind(func)
    if kind == _MASKED:  # integer indices give their own shape; a mask does not
        return any(isinstance(i, torch.Tensor) and i.dtype in _MASKS for i in args[1])
    return kind == _ALWAYS


class Shapes:
    """The data-dependent tensors of a run so far, held weakly (they die with the run)."""

    def __init__(self) -> None:
        self.tainted = WeakIdKeyDictionary()

    def saw(self, func: object, args: tuple[Any, ...], kwargs: dict[str, Any], out: object) -> None:
        """One operation of the run: its outputs are data-dependent when it starts one or reads one."""
        if not starts(func, args):
            if not self.tainted:  # the usual case: nothing data-dependent yet, nothing to look up
                return
            if not any(isinstance(a, torch.Tensor) and a in self.tainted for a in tree_leaves((args, kwargs))):
                return
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.tainted[t] = True

    def holds(self, t: torch.Tensor) -> bool:
        return t in self.tainted
