"""Behaviour-preserving refactors, the changes a team makes to its model code every week: each
moves no number, and most change names or structure. A refactor finds its own target in any
architecture (a middle Linear or Conv, an activation, a Sequential, the head) and raises
``NotApplicable`` when the model has none. ``attn_sdpa`` is built, not applied: ``factories``
passes ``attention="sdpa"`` to a transformers model's builder."""

from __future__ import annotations

import io
from collections.abc import Callable

import torch
from torch import nn


class NotApplicable(Exception):
    """The model has nothing this refactor changes."""


ACTIVATIONS = ("ReLU", "GELU", "SiLU", "Hardswish", "Hardsigmoid", "Sigmoid", "ReLU6", "GELUActivation",
               "NewGELUActivation", "SiLUActivation")
SEQUENCES = (nn.Sequential, nn.ModuleList, nn.ModuleDict)


def _parent(model: nn.Module, name: str) -> tuple[nn.Module, str]:
    parent, _, attr = name.rpartition(".")
    return model.get_submodule(parent), attr


def _pick(model: nn.Module, test: Callable[[str, nn.Module], bool], where: float = 0.5) -> str:
    names = [n for n, m in model.named_modules() if n and test(n, m)]
    if not names:
        raise NotApplicable
    return names[min(int(len(names) * where), len(names) - 1)]


def _attr_child(model: nn.Module, types: tuple[type, ...] | None = None, names: tuple[str, ...] = ()):
    """A test for modules held as a named attribute (not in a Sequential/ModuleList) of one of the types."""
    def test(name: str, m: nn.Module) -> bool:
        parent, _ = _parent(model, name)
        kind_ok = isinstance(m, types) if types else type(m).__name__ in names
        return kind_ok and not isinstance(parent, SEQUENCES)
    return test


def _splittable(_name: str, m: nn.Module) -> bool:
    return isinstance(m, nn.Linear) or (isinstance(m, nn.Conv2d) and m.groups == 1)


def _leaf_compute(model: nn.Module):
    """A test for a Linear, Conv or transformers ``Conv1D`` that its parent calls (MultiheadAttention
    reads its ``out_proj`` weights instead of calling it)."""
    def test(name: str, m: nn.Module) -> bool:
        called = not isinstance(_parent(model, name)[0], nn.MultiheadAttention)
        return called and (_splittable(name, m) or type(m).__name__ == "Conv1D")
    return test


def _rekey(parent: nn.Module, old: str, new: str) -> None:
    items = list(parent._modules.items())
    parent._modules.clear()
    for key, value in items:
        parent._modules[new if key == old else key] = value
    if not isinstance(parent, nn.Sequential):  # the forward still says `self.<old>`
        parent.__class__ = type(type(parent).__name__, (type(parent),),
                                {old: property(lambda self: self._modules[new])})


def _rename(model: nn.Module, name: str, new: str) -> nn.Module:
    parent, attr = _parent(model, name)
    if isinstance(parent, (nn.ModuleList, nn.ModuleDict)):
        raise NotApplicable
    _rekey(parent, attr, new)
    return model


def rename_leaf(model, _rebuild):
    """``self.proj`` -> ``self.proj_renamed``: a middle Linear or Conv gets another name."""
    name = _pick(model, lambda n, m: _leaf_compute(model)(n, m) and not isinstance(_parent(model, n)[0], SEQUENCES))
    return _rename(model, name, name.rpartition(".")[2] + "_renamed")


def rename_head(model, _rebuild):
    """``fc`` -> ``head``: the last Linear (or Conv) of the model gets another name."""
    name = _pick(model, lambda n, m: _leaf_compute(model)(n, m) and not isinstance(_parent(model, n)[0],
                                                                                  (nn.ModuleList, nn.ModuleDict)), 1.0)
    return _rename(model, name, "head")


def rename_block(model, _rebuild):
    """``layer2`` -> ``stage2``: a top-level block and everything in it get other names."""
    blocks = [n for n, m in model.named_children() if len(list(m.children())) > 1]
    if not blocks:
        raise NotApplicable
    return _rename(model, blocks[len(blocks) // 2], "renamed_" + blocks[len(blocks) // 2])


def wrap_sequential(model, _rebuild):
    """A middle Linear or Conv wrapped in an ``nn.Sequential`` (``proj`` -> ``proj.0``)."""
    name = _pick(model, _leaf_compute(model))
    model.set_submodule(name, nn.Sequential(model.get_submodule(name)))
    return model


def insert_identity(model, _rebuild):
    """An ``nn.Identity`` after a middle Linear or Conv (a placeholder a refactor leaves behind)."""
    name = _pick(model, _leaf_compute(model))
    model.set_submodule(name, nn.Sequential(model.get_submodule(name), nn.Identity()))
    return model


def functional_activation(model, _rebuild):
    """Every activation module held as an attribute replaced by the same call written as a function."""
    names = [n for n, m in model.named_modules() if n and _attr_child(model, names=ACTIVATIONS)(n, m)]
    if not names:
        raise NotApplicable
    for name in names:
        parent, attr = _parent(model, name)
        call = parent._modules.pop(attr).forward  # the same computation, no longer a module
        object.__setattr__(parent, attr, call)
    return model


def split_linear(model, _rebuild):
    """A middle Linear or Conv split in two along its outputs, concatenated: one module becomes two."""
    name = _pick(model, lambda n, m: _leaf_compute(model)(n, m) and _splittable(n, m) and m.weight.shape[0] >= 2)
    model.set_submodule(name, Split(model.get_submodule(name)))
    return model


class Split(nn.Module):
    def __init__(self, whole: nn.Module):
        super().__init__()
        half = whole.weight.shape[0] // 2
        self.dim = -1 if isinstance(whole, nn.Linear) else 1
        self.first, self.second = _part(whole, 0, half), _part(whole, half, whole.weight.shape[0])

    def forward(self, x):
        return torch.cat([self.first(x), self.second(x)], dim=self.dim)


def _part(whole: nn.Module, lo: int, hi: int) -> nn.Module:
    if isinstance(whole, nn.Linear):
        part = nn.Linear(whole.in_features, hi - lo, bias=whole.bias is not None)
    else:
        part = nn.Conv2d(whole.in_channels, hi - lo, whole.kernel_size, whole.stride, whole.padding,
                         whole.dilation, 1, whole.bias is not None, whole.padding_mode)
    with torch.no_grad():
        part.weight.copy_(whole.weight[lo:hi])
        if whole.bias is not None:
            part.bias.copy_(whole.bias[lo:hi])
    return part


def split_sequential(model, _rebuild):
    """The first ``nn.Sequential`` of two or more modules regrouped into two nested Sequentials."""
    name = _pick(model, lambda n, m: type(m) is nn.Sequential and len(m) >= 2, 0.0)
    seq = model.get_submodule(name)
    half = len(seq) // 2
    model.set_submodule(name, nn.Sequential(nn.Sequential(*list(seq)[:half]), nn.Sequential(*list(seq)[half:])))
    return model


class Wrapper(nn.Module):
    """The model moved into a wrapper (a training framework's module, an export wrapper)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)


def wrap_model(model, _rebuild):
    """Every name gains a prefix: ``layer1.0.conv1`` -> ``model.layer1.0.conv1``."""
    return Wrapper(model)


def reorder_registration(model, _rebuild):
    """The model's children registered in reverse order (``__init__`` rearranged); the forward is unchanged."""
    if isinstance(model, SEQUENCES):
        raise NotApplicable
    items = list(model._modules.items())
    model._modules.clear()
    model._modules.update(reversed(items))
    return model


def unused_module(model, _rebuild):
    """An auxiliary head the forward never calls (a training-only branch)."""
    model.add_module("aux_head", nn.Linear(4, 4))
    return model


def unused_buffer(model, _rebuild):
    """A buffer nothing reads (calibration statistics kept for later)."""
    model.register_buffer("calibration", torch.linspace(0, 1, 5))
    return model


def unused_parameter(model, _rebuild):
    """A parameter nothing reads."""
    model.register_parameter("spare", nn.Parameter(torch.zeros(3)))
    return model


def subclass_rename(model, _rebuild):
    """A middle Linear or Conv replaced by a subclass that adds nothing (another class name)."""
    m = model.get_submodule(_pick(model, _leaf_compute(model)))
    m.__class__ = type(f"Custom{type(m).__name__}", (type(m),), {})
    return model


def noop_forward_hook(model, _rebuild):
    """A user's observability hook on every module: it reads outputs and changes nothing."""
    for m in model.modules():
        m.register_forward_hook(lambda _m, _i, _o: None)
    return model


def frozen(model, _rebuild):
    """Every parameter frozen (``requires_grad=False``), as a fine-tuning script leaves it."""
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def bn_momentum(model, _rebuild):
    """BatchNorm momentum changed: a training setting, inactive at inference."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        raise NotApplicable
    for m in norms:
        m.momentum = 0.01
    return model


def _dropouts(model):
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Dropout)]
    if not names:
        raise NotApplicable
    return names


def dropout_p(model, _rebuild):
    """Dropout probabilities changed: inactive at inference."""
    for name in _dropouts(model):
        model.get_submodule(name).p = 0.3
    return model


def dropout_to_identity(model, _rebuild):
    """Every Dropout replaced by ``nn.Identity`` (same names, another class)."""
    for name in _dropouts(model):
        model.set_submodule(name, nn.Identity())
    return model


def dropout_removed(model, _rebuild):
    """Every Dropout deleted: from a Sequential (later indices shift) or as an attribute (a no-op call)."""
    for name in reversed(_dropouts(model)):
        parent, attr = _parent(model, name)
        if isinstance(parent, nn.Sequential):
            del parent[int(attr)]
        else:
            del parent._modules[attr]
            object.__setattr__(parent, attr, _passthrough)
    return model


def _passthrough(x, *_args, **_kwargs):
    return x


def relu_not_inplace(model, _rebuild):
    """``nn.ReLU(inplace=True)`` -> ``nn.ReLU()``."""
    names = [n for n, m in model.named_modules() if isinstance(m, nn.ReLU) and m.inplace]
    if not names:
        raise NotApplicable
    for name in names:
        model.set_submodule(name, nn.ReLU())
    return model


class GeluFn(nn.Module):
    """The exact GELU written as a function call: same math as nn.GELU()."""

    def forward(self, x):
        return nn.functional.gelu(x)


def gelu_as_function(model, _rebuild):
    """``nn.GELU()`` -> a module that calls ``F.gelu``."""
    names = [n for n, m in model.named_modules() if isinstance(m, nn.GELU) and m.approximate == "none"]
    if not names:
        raise NotApplicable
    for name in names:
        model.set_submodule(name, GeluFn())
    return model


def channels_last(model, _rebuild):
    """Weights in channels-last memory format (a common speed-up for CNNs)."""
    if not any(isinstance(m, nn.Conv2d) for m in model.modules()):
        raise NotApplicable
    return model.to(memory_format=torch.channels_last)


def state_dict_roundtrip(model, rebuild):
    """The weights saved and loaded into a freshly built model (a checkpoint round trip)."""
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    torch.manual_seed(1234)  # the fresh model starts from other random weights, then loads
    fresh = rebuild()
    buf.seek(0)
    fresh.load_state_dict(torch.load(buf, weights_only=True))
    return fresh


REFACTORS: dict[str, Callable] = {f.__name__: f for f in (
    rename_leaf, rename_head, rename_block, wrap_sequential, insert_identity, functional_activation, split_linear,
    split_sequential, wrap_model, reorder_registration, unused_module, unused_buffer, unused_parameter,
    subclass_rename, noop_forward_hook, frozen, bn_momentum, dropout_p, dropout_to_identity, dropout_removed,
    relu_not_inplace, gelu_as_function, channels_last, state_dict_roundtrip)}
BUILT = ("attn_sdpa",)  # built with other arguments (transformers models only)
RUNS = ("rerun", "threads_1", "baseline_other_process", "baseline_other_threads")  # the same model, run otherwise
