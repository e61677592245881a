"""Refactors inside a module: values move from one layer of a module to another while the module's
output holds, as a team preparing a model for deployment does on purpose.

- ``fold_batchnorm``: every BatchNorm after a convolution folded into it (the convolution's weights
  absorb it, in float32, as ``torch.nn.utils.fusion`` does; the BatchNorm becomes an ``nn.Identity``);
- ``merge_projections``: a gated MLP's two parallel input projections merged into one (``gate_proj``
  computes both, ``up_proj`` is gone);
- ``split_layer``: a biased Linear or Conv held in an ``nn.Sequential`` split in two: the layer without
  its bias, then a module that adds it (the indices after it shift).

A factor moved from one layer's weights into the next's is no refactor here: no code changed, and a
change of weights alone fails where the reference moved (``gate.verdict.moves``).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from faultbench.refactors import NotApplicable, _parent


def conv_bn_pairs(model: nn.Module) -> list[tuple[str, str]]:
    """(convolution, the BatchNorm right after it): neighbours in an ``nn.Sequential``, or ``convN``
    and ``bnN`` of one module (ResNet's blocks and stem)."""
    pairs = []
    for name, m in model.named_modules():
        kids = list(m.named_children())
        prefix = f"{name}." if name else ""
        if isinstance(m, nn.Sequential):
            pairs += [(prefix + a, prefix + b) for (a, x), (b, y) in zip(kids, kids[1:], strict=False)
                      if isinstance(x, nn.Conv2d) and isinstance(y, nn.BatchNorm2d)]
            continue
        named = dict(kids)
        pairs += [(prefix + "conv" + k[2:], prefix + k) for k, y in kids if k.startswith("bn") and
                  isinstance(y, nn.BatchNorm2d) and isinstance(named.get("conv" + k[2:]), nn.Conv2d)]
    return pairs


def fold_batchnorm(model, _rebuild):
    """Every BatchNorm after a convolution folded into that convolution."""
    pairs = conv_bn_pairs(model)
    if not pairs:
        raise NotApplicable
    for conv, bn in pairs:
        mode = model.get_submodule(conv).training  # fusing needs eval mode; the model keeps the mode it was in
        fused = fuse_conv_bn_eval(model.get_submodule(conv).eval(), model.get_submodule(bn).eval())
        model.set_submodule(conv, fused.train(mode))
        model.set_submodule(bn, nn.Identity().train(mode))
    return model


class MergedMLP(nn.Module):
    """A gated MLP whose gate and up projections are one Linear: ``gate_proj`` computes both."""

    def __init__(self, mlp: nn.Module):
        super().__init__()
        gate, up = mlp.gate_proj, mlp.up_proj
        self.gate_proj = nn.Linear(gate.in_features, gate.out_features + up.out_features, bias=gate.bias is not None)
        with torch.no_grad():
            self.gate_proj.weight.copy_(torch.cat([gate.weight, up.weight]))
            if gate.bias is not None:
                self.gate_proj.bias.copy_(torch.cat([gate.bias, up.bias]))
        self.down_proj, self.act_fn = mlp.down_proj, mlp.act_fn

    def forward(self, x):
        g, u = self.gate_proj(x).chunk(2, dim=-1)
        return self.down_proj(self.act_fn(g) * u)


def merge_projections(model, _rebuild):
    """Every gated MLP's ``gate_proj`` and ``up_proj`` merged into one projection."""
    names = [n for n, m in model.named_modules() if all(hasattr(m, a) for a in ("gate_proj", "up_proj", "down_proj", "act_fn"))]
    if not names:
        raise NotApplicable
    for name in names:
        model.set_submodule(name, MergedMLP(model.get_submodule(name)))
    return model


class AddBias(nn.Module):
    def __init__(self, bias: torch.Tensor, channels_dim: int):
        super().__init__()
        self.bias = nn.Parameter(bias.detach().clone())
        self.dim = channels_dim

    def forward(self, x):
        shape = [1] * x.dim()
        shape[self.dim] = -1
        return x + self.bias.reshape(shape)


def split_layer(model, _rebuild):
    """A biased Linear or Conv in an ``nn.Sequential`` (the middle one) split into the layer without its
    bias and a module adding it."""
    found = [(n, m) for n, m in model.named_modules() if isinstance(m, (nn.Linear, nn.Conv2d)) and m.bias is not None
             and n.rpartition(".")[2].isdigit() and isinstance(_parent(model, n)[0], nn.Sequential)]
    if not found:
        raise NotApplicable
    name, layer = found[len(found) // 2]
    seq, attr = _parent(model, name)
    bias, layer.bias = layer.bias, None
    parts = list(seq)
    parts.insert(int(attr) + 1, AddBias(bias, -1 if isinstance(layer, nn.Linear) else 1))
    seq._modules.clear()  # the same Sequential (its class kept), its indices after the split shifted
    seq._modules.update((str(i), m) for i, m in enumerate(parts))
    return model


REFACTORS = {f.__name__: f for f in (fold_batchnorm, merge_projections, split_layer)}
