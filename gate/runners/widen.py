"""Run a float32 model as float64 without a float64 copy of it.

``float64_weights`` gives a module its parameters and floating buffers as float64 just before
it runs and puts the float32 ones back when it returns. The outermost modules whose weights
fit in ``SUBTREE_BYTES`` are widened whole (their children included: code such as
``nn.MultiheadAttention`` reads a child's weight without calling the child); modules above
them widen only their own. At most the weights of the calls in flight exist twice (one block,
not the model). The float32 tensors are never
modified: the instance the export and the PyTorch providers use stays as it was. The widening
is exact (float32 -> float64), so a layer computes what it computes on a deep copy made with
``.double()``. Code that reads another module's weights outside that module's call would see
float32; the reference then falls back to the copy (``reference.run_reference``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from gate.runners.torch_hooks import _own_work

_WIDE = (torch.float32, torch.float16, torch.bfloat16)
SUBTREE_BYTES = 256 * 2**20


def _size(module: torch.nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in module.parameters()) + \
        sum(t.numel() * t.element_size() for t in module.buffers())


def plan(module: torch.nn.Module, limit: int = SUBTREE_BYTES) -> list[tuple[torch.nn.Module, bool]]:
    """(module, whole subtree?) for every module that widens something when it is called."""
    out: list[tuple[torch.nn.Module, bool]] = []
    todo = [module]
    while todo:
        m = todo.pop()
        if _size(m) <= limit:
            out.append((m, True))
            continue
        out.append((m, False))
        todo.extend(m.children())
    return out


class _Widened:
    def __init__(self, whole: set[int]) -> None:
        self.whole = whole  # modules widened with their subtree
        self.saved: dict[int, list[tuple[torch.nn.Module, dict, dict]]] = {}
        self.depth: dict[int, int] = {}

    def pre(self, module: torch.nn.Module, _args) -> None:
        key = id(module)
        self.depth[key] = self.depth.get(key, 0) + 1
        if self.depth[key] > 1:
            return
        subtree = module.modules() if key in self.whole else (module,)
        with _own_work():  # the widening is the gate's work, not the model's: the watch must not see it
            self.saved[key] = [_widen(m) for m in subtree]

    def post(self, module: torch.nn.Module, _args, _output) -> None:
        key = id(module)
        self.depth[key] = self.depth.get(key, 1) - 1
        if self.depth[key] <= 0:
            self.restore(key)

    def restore(self, key: int) -> None:
        for module, params, buffers in reversed(self.saved.pop(key, [])):
            module._parameters.update(params)
            module._buffers.update(buffers)


def _widen(module: torch.nn.Module) -> tuple[torch.nn.Module, dict, dict]:
    """Swap ``module``'s own floating weights for float64 copies; the originals, to put back."""
    params, buffers = {}, {}
    for name, p in module._parameters.items():
        if p is not None and p.dtype in _WIDE and p.dtype != torch.float64:
            params[name] = p
            module._parameters[name] = torch.nn.Parameter(p.detach().double(), requires_grad=p.requires_grad)
    for name, b in module._buffers.items():
        if b is not None and b.dtype in _WIDE:
            buffers[name] = b
            module._buffers[name] = b.double()
    return module, params, buffers


@contextlib.contextmanager
def float64_weights(module: torch.nn.Module) -> Iterator[None]:
    """While the block runs, each module's weights are float64 during its own calls."""
    steps = plan(module)
    state = _Widened({id(m) for m, whole in steps if whole})
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
