"""The backward pass as layers (``gradients = true``): every parameter gradient of a seeded loss,
fingerprinted as ``grad:<parameter name>`` in the order backward produces them.

The loss is a fixed random projection of the outputs (``sum_i <out_i, R_i>``, ``R`` drawn in float64
from the model's seed), the same on every provider, so gradients compare like activations. ONNX
Runtime runs inference graphs only: its providers report these layers absent, and say why."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from gate.core.layers import GRADIENT
from gate.fingerprint import fingerprint
from gate.model.torch_hooks import LayerOutput, flatten, to_numpy

_SALT = 0x67726164  # "grad": the projection's stream differs from the inputs' under the same seed


def projection(outputs: Sequence[torch.Tensor], seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed ^ _SALT)
    return [torch.randn(tuple(t.shape), generator=generator, dtype=torch.float64) for t in outputs]


def gradients(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], seed: int,
              forward: Callable[..., Any] | None = None) -> list[LayerOutput]:
    """The parameter gradients of the projected loss, in backward's order; ``forward`` (e.g. a compiled
    module) runs ``module``'s parameters. Their ``requires_grad`` and ``.grad`` are restored: the
    other providers run the same instance."""
    params = [(name, p) for name, p in module.named_parameters() if p.is_floating_point()]
    before = [(p, p.requires_grad, p.grad) for _, p in params]
    produced: list[LayerOutput] = []

    def record(p: torch.Tensor, name: str) -> None:
        produced.append(LayerOutput(f"{GRADIENT}{name}", name, 0, "", "grad", fingerprint(to_numpy(p.grad))))
        p.grad = None  # fingerprinted: never held for the whole backward

    handles = [p.register_post_accumulate_grad_hook(functools.partial(record, name=name)) for name, p in params]
    try:
        for _, p in params:
            p.requires_grad_(True)
            p.grad = None
        with torch.enable_grad():
            xs = tuple(t.clone() for t in inputs)  # tensors made under inference mode cannot enter autograd
            run = module if forward is None else forward  # never `forward or`: a compiled module has no len()
            out = [t for _, t in flatten(run(*xs)) if t.is_floating_point() and t.requires_grad]
            if out:
                loss = sum((t * r.to(device=t.device, dtype=t.dtype)).sum() for t, r in zip(out, projection(out, seed), strict=True))
                loss.backward()
    finally:
        for h in handles:
            h.remove()
        for p, requires, grad in before:
            p.requires_grad_(requires)
            p.grad = grad
    return produced
