"""Faults in the PyTorch model: what a pull request to the model's code or weights does wrong.
Each is injected at one module (its qualified name) and names the hint its cause should produce."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

HINT_W = ("model-change", "weights")
HINT_C = ("model-change", "code")
# A Dropout left active draws random numbers: the cause to name is the draw (its advice: ``model.eval()``).
HINT_RAND = ("model-change", "random")
HINT_L = ("layout", None)
HINT_P = ("precision-loss", None)
HINT_R = ("runtime-change", None)


@dataclass(frozen=True)
class Fault:
    layer: str  # where it is injected (a module's qualified name)
    hint: tuple[str, str | None]  # the hint kind (and cause) it should produce
    apply: Callable[..., Any]  # model: (module, layer) -> None; graph: (ModelProto, layer) -> ModelProto
    side: str = "model"  # "model": the PyTorch model | "graph": the exported graph | "runtime": session options
    session: dict[str, Any] = field(default_factory=dict)  # runtime faults: the provider's session-options


def _swap_class(module: nn.Module, tag: str, **methods) -> None:
    """Change one module's behaviour without renaming it: a subclass of its own class."""
    module.__class__ = type(f"{tag}{type(module).__name__}", (type(module),), methods)


def scale_weight(eps: float):
    def apply(model, path):
        with torch.no_grad():
            model.get_submodule(path).weight.mul_(1 + eps)
    return apply


def swap_activation(new):
    def apply(model, path):
        model.set_submodule(path, new())
    return apply


def set_eps(value: float, otherwise: float = 1e-5):
    """eps -> ``value`` (``otherwise`` when it already is ``value``: mobilenet_v3's BatchNorms use 1e-3)."""
    def apply(model, path):
        m = model.get_submodule(path)
        attr = "variance_epsilon" if hasattr(m, "variance_epsilon") else "eps"  # RMSNorm in transformers
        setattr(m, attr, otherwise if getattr(m, attr) == value else value)
    return apply


def attention_scale(factor: float):
    def apply(model, path):
        m = model.get_submodule(path)
        if hasattr(m, "scaling"):  # transformers eager attention
            m.scaling = m.scaling * factor
        else:  # torch.nn.MultiheadAttention: its scale is internal; scaling q is the same change
            d = m.embed_dim
            with torch.no_grad():
                m.in_proj_weight[:d].mul_(factor)
                m.in_proj_bias[:d].mul_(factor)
    return apply


def _transpose_forward(self, *args, **kwargs):
    y = super(type(self), self).forward(*args, **kwargs)
    return y.transpose(-1, -2).contiguous().reshape(y.shape)


def transpose(model, path):
    """A shape-preserving transpose of the layer's output (transpose then reshape when not square)."""
    _swap_class(model.get_submodule(path), "Transposed", forward=_transpose_forward)


def _fp16_forward(self, *args, **kwargs):
    y = super(type(self), self).forward(*args, **kwargs)
    return y.to(torch.float16).to(y.dtype)


def fp16_roundtrip(model, path):
    _swap_class(model.get_submodule(path), "Half", forward=_fp16_forward)


def _always_train(self, mode=True):
    self.training = True
    return self


def stuck_in_training(model, path):
    """``module.train()`` that survives ``model.eval()`` (which the gate calls after the factory, as
    every inference pipeline does): a Dropout (or BatchNorm) left in training mode."""
    m = model.get_submodule(path)
    _swap_class(m, "Training", train=_always_train)
    m.training = True


def padding_reflect(model, path):
    model.get_submodule(path).padding_mode = "reflect"


W3, W6, EPS = scale_weight(1e-3), scale_weight(1e-6), set_eps(1e-3)


def _f(layer, apply, hint) -> Fault:
    return Fault(layer, hint, apply)


MODEL_FAULTS: dict[str, dict[str, Fault]] = {
    "resnet18": {
        "weight_1e3": _f("layer2.0.conv1", W3, HINT_W),
        "weight_1e6": _f("layer3.1.conv2", W6, HINT_W),
        "act_relu_to_gelu": _f("layer2.0.relu", swap_activation(lambda: nn.GELU()), HINT_C),
        "norm_eps": _f("layer1.1.bn2", EPS, HINT_C),
        "transpose": _f("layer2.1.bn1", transpose, HINT_L),
        "padding_reflect": _f("layer3.0.conv2", padding_reflect, HINT_C),
        "fp16_roundtrip": _f("layer3.0.conv1", fp16_roundtrip, HINT_P),
        # resnet18 has no Dropout: the same bug class on a BatchNorm (batch statistics at inference)
        "bn_left_training": _f("layer1.0.bn1", stuck_in_training, HINT_C),
    },
    "mobilenet_v3_small": {
        "weight_1e3": _f("features.4.block.0.0", W3, HINT_W),
        "weight_1e6": _f("features.6.block.3.0", W6, HINT_W),
        "act_hardswish_to_relu": _f("features.4.block.0.2", swap_activation(lambda: nn.ReLU()), HINT_C),
        "norm_eps": _f("features.2.block.1.1", EPS, HINT_C),
        "transpose": _f("features.3.block.0.1", transpose, HINT_L),
        "padding_reflect": _f("features.5.block.1.0", padding_reflect, HINT_C),
        "fp16_roundtrip": _f("features.7.block.0.0", fp16_roundtrip, HINT_P),
        "dropout_left_active": _f("classifier.2", stuck_in_training, HINT_RAND),
    },
    "efficientnet_b0": {
        "weight_1e3": _f("features.3.0.block.0.0", W3, HINT_W),
        "weight_1e6": _f("features.5.1.block.3.0", W6, HINT_W),
        "act_silu_to_relu": _f("features.2.0.block.0.2", swap_activation(lambda: nn.ReLU()), HINT_C),
        "norm_eps": _f("features.4.0.block.1.1", EPS, HINT_C),
        "transpose": _f("features.3.1.block.0.1", transpose, HINT_L),
        "padding_reflect": _f("features.2.0.block.1.0", padding_reflect, HINT_C),
        "fp16_roundtrip": _f("features.6.0.block.0.0", fp16_roundtrip, HINT_P),
        "dropout_left_active": _f("classifier.0", stuck_in_training, HINT_RAND),
    },
    "vit": {
        "weight_1e3": _f("encoder.layers.encoder_layer_0.mlp.0", W3, HINT_W),
        "weight_1e6": _f("encoder.layers.encoder_layer_1.mlp.3", W6, HINT_W),
        "act_gelu_to_relu": _f("encoder.layers.encoder_layer_0.mlp.1", swap_activation(lambda: nn.ReLU()), HINT_C),
        "norm_eps": _f("encoder.layers.encoder_layer_1.ln_1", EPS, HINT_C),
        "attention_scale": _f("encoder.layers.encoder_layer_0.self_attention", attention_scale(1.1), HINT_W),
        "transpose": _f("encoder.layers.encoder_layer_0.mlp.0", transpose, HINT_L),
        "fp16_roundtrip": _f("encoder.layers.encoder_layer_1.mlp.0", fp16_roundtrip, HINT_P),
        "dropout_left_active": _f("encoder.layers.encoder_layer_0.dropout", stuck_in_training, HINT_RAND),
    },
    "bert": {
        "weight_1e3": _f("encoder.layer.0.intermediate.dense", W3, HINT_W),
        "weight_1e6": _f("encoder.layer.1.output.dense", W6, HINT_W),
        "act_gelu_to_relu": _f("encoder.layer.0.intermediate.intermediate_act_fn",
                               swap_activation(lambda: nn.ReLU()), HINT_C),
        "norm_eps": _f("encoder.layer.1.attention.output.LayerNorm", EPS, HINT_C),
        "attention_scale": _f("encoder.layer.0.attention.self", attention_scale(1.1), HINT_C),
        "transpose": _f("encoder.layer.0.intermediate.dense", transpose, HINT_L),
        "fp16_roundtrip": _f("encoder.layer.1.intermediate.dense", fp16_roundtrip, HINT_P),
        "dropout_left_active": _f("embeddings.dropout", stuck_in_training, HINT_RAND),
    },
    "gpt2": {
        "weight_1e3": _f("h.0.mlp.c_fc", W3, HINT_W),
        "weight_1e6": _f("h.1.attn.c_proj", W6, HINT_W),
        "act_gelu_new_to_gelu": _f("h.0.mlp.act", swap_activation(lambda: nn.GELU()), HINT_C),
        "norm_eps": _f("h.1.ln_2", EPS, HINT_C),
        "attention_scale": _f("h.0.attn", attention_scale(1.1), HINT_C),
        "transpose": _f("h.0.mlp.c_fc", transpose, HINT_L),
        "fp16_roundtrip": _f("h.1.mlp.c_fc", fp16_roundtrip, HINT_P),
        "dropout_left_active": _f("drop", stuck_in_training, HINT_RAND),
    },
    "llama": {
        "weight_1e3": _f("layers.0.mlp.gate_proj", W3, HINT_W),
        "weight_1e6": _f("layers.1.self_attn.o_proj", W6, HINT_W),
        "act_silu_to_relu": _f("layers.0.mlp.act_fn", swap_activation(lambda: nn.ReLU()), HINT_C),
        "norm_eps": _f("layers.1.post_attention_layernorm", set_eps(1e-3, 1e-6), HINT_C),
        "attention_scale": _f("layers.0.self_attn", attention_scale(1.1), HINT_C),
        "transpose": _f("layers.0.mlp.up_proj", transpose, HINT_L),
        "fp16_roundtrip": _f("layers.1.mlp.up_proj", fp16_roundtrip, HINT_P),
    },
}
