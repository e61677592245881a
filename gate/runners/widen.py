"""Run a float32 model as float64 without a float64 copy of it.

``float64_weights`` widens a module's floating weights just before it runs and puts the float32 ones
back when it returns. The outermost modules within ``SUBTREE_BYTES`` widen whole, since code such as
``nn.MultiheadAttention`` reads a child's weight without calling it. Widening is exact; code that
reads another module's weights outside its call sees float32, and the reference falls back to a copy.
Large float64 tensors come from a pool (``_Pool``): fresh pages fault and zero per 4 KiB, which costs
more than the widening. A plain ``nn.Embedding`` widens only the rows its input names."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from gate.model.torch_hooks import _own_work

_WIDE = (torch.float32, torch.float16, torch.bfloat16)
SUBTREE_BYTES = 256 * 2**20


def _size(module: torch.nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in (*module.parameters(), *module.buffers()))


def plan(module: torch.nn.Module, limit: int = SUBTREE_BYTES) -> list[tuple[torch.nn.Module, bool]]:
    """(module, whole subtree?) for every module that widens something when it is called."""
    out: list[tuple[torch.nn.Module, bool]] = []
    todo = [module]
    while todo:
        m = todo.pop()
        whole = _size(m) <= limit
        out.append((m, whole))
        if not whole:
            todo.extend(m.children())
    return out


POOLED_BYTES = 2**20  # smaller tensors are cheap to allocate: widened with .double()
_use_count = getattr(torch._C, "_storage_Use_Count", None)


class _Pool:
    """Contiguous float64 tensors by element count, at most ``limit`` bytes; one goes back only when
    nothing else references its memory (a module may return a view of its weight)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.free: dict[int, list[torch.Tensor]] = {}
        self.held = 0

    def widen(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``t`` as float64, and the pooled tensor it lives in (None: not pooled)."""
        if _use_count is None or not t.is_contiguous() or t.numel() * 8 < POOLED_BYTES:
            return t.double(), None
        stack = self.free.get(t.numel())
        if stack:
            flat = stack.pop()
            self.held -= flat.numel() * 8
        else:
            flat = torch.empty(t.numel(), dtype=torch.float64)
        return flat.view(t.shape).copy_(t), flat

    def give_back(self, flat: torch.Tensor) -> None:
        # Use count 2: ``flat`` and the storage object asked for here; anything more is a live view.
        if _use_count(flat.untyped_storage()._cdata) > 2 or self.held + flat.numel() * 8 > self.limit:
            return
        self.free.setdefault(flat.numel(), []).append(flat)
        self.held += flat.numel() * 8


def gathers(module: torch.nn.Module) -> bool:
    """Whether ``module``'s call reads its table only at the rows its input names: torch's own
    ``nn.Embedding.forward`` on a plain weight, with no hook that could read the rest."""
    weight = module._parameters.get("weight") if isinstance(module, torch.nn.Embedding) else None
    everywhere = [getattr(torch.nn.modules.module, f"_global_forward{kind}_hooks", None)
                  for kind in ("_pre", "")]
    hooks = (module._forward_pre_hooks, module._forward_hooks, *everywhere)
    return (weight is not None and type(module).forward is torch.nn.Embedding.forward
            and weight.dtype in _WIDE and not any(hooks) and not module._modules)


class _Widened:
    def __init__(self, whole: set[int], pool: _Pool, gathered: set[int]) -> None:
        self.whole = whole  # modules widened with their subtree
        self.gathered = gathered  # embeddings widened at the rows their input names (``gathers``)
        self.saved: dict[int, list[tuple[torch.nn.Module, dict[str, Any], dict[str, Any], list[Any]]]] = {}
        self.depth: dict[int, int] = {}
        self.pool = pool

    def pre(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        key = id(module)
        self.depth[key] = self.depth.get(key, 0) + 1
        if self.depth[key] > 1:
            return
        subtree = module.modules() if key in self.whole else (module,)
        with _own_work():  # the widening is the gate's work, not the model's: the watch must not see it
            if key in self.gathered and args and isinstance(args[0], torch.Tensor):
                self.saved[key] = [_widen_rows(module, args[0])]
            else:
                self.saved[key] = [_widen(m, self.pool) for m in subtree]

    def post(self, module: torch.nn.Module, _args: tuple[Any, ...], _output: object) -> None:
        key = id(module)
        self.depth[key] = self.depth.get(key, 1) - 1
        if self.depth[key] <= 0:
            self.restore(key)

    def restore(self, key: int) -> None:
        for module, params, buffers, pooled in reversed(self.saved.pop(key, [])):
            module._parameters.update(params)
            module._buffers.update(buffers)
            for flat in pooled:
                self.pool.give_back(flat)


def _widen(module: torch.nn.Module, pool: _Pool
           ) -> tuple[torch.nn.Module, dict[str, Any], dict[str, Any], list[Any]]:
    """Swap ``module``'s own floating weights for float64 ones; the originals and the pooled tensors."""
    params, buffers, pooled = {}, {}, []
    for name, p in module._parameters.items():
        if p is not None and p.dtype in _WIDE and p.dtype != torch.float64:
            params[name] = p
            wide, flat = pool.widen(p.detach())
            module._parameters[name] = torch.nn.Parameter(wide, requires_grad=p.requires_grad)
            pooled += [flat] if flat is not None else []
    for name, b in module._buffers.items():
        if b is not None and b.dtype in _WIDE:
            buffers[name] = b
            module._buffers[name], flat = pool.widen(b)
            pooled += [flat] if flat is not None else []
    return module, params, buffers, pooled


Swapped = tuple[torch.nn.Module, dict[str, torch.Tensor], dict[str, torch.Tensor], list[torch.Tensor]]


def _widen_rows(module: torch.nn.Module, index: torch.Tensor) -> Swapped:
    """An embedding's table as float64 at the rows ``index`` names; the other rows are allocated,
    never written (an index out of range fails here as it would in the forward)."""
    weight = module._parameters["weight"]
    assert weight is not None
    rows = torch.unique(index.reshape(-1).to(weight.device))
    wide = torch.empty(weight.shape, dtype=torch.float64, device=weight.device)
    wide[rows] = weight.detach()[rows].double()
    module._parameters["weight"] = torch.nn.Parameter(wide, requires_grad=weight.requires_grad)
    return module, {"weight": weight}, {}, []


@contextlib.contextmanager
def float64_weights(module: torch.nn.Module, limit: int = SUBTREE_BYTES) -> Iterator[None]:
    """While the block runs, each module's weights are float64 during its own calls."""
    steps = plan(module, limit)
    gathered = {id(m) for m, _ in steps if gathers(m)}  # whole or not: an embedding has no children
    largest = max((_size(m) for m, whole in steps if whole and id(m) not in gathered), default=0)
    whole = {id(m) for m, whole in steps if whole}
    state = _Widened(whole, _Pool(4 * largest), gathered)  # the pool: two blocks, in float64
    handles = []
    for m, _ in steps:
        handles.append(m.register_forward_pre_hook(state.pre, prepend=True))
        handles.append(m.register_forward_hook(state.post, always_call=True))
    try:
        yield
    finally:
        for h in handles:
            h.remove()
        for key in list(state.saved):
            state.restore(key)
