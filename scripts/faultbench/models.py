"""Public architectures with random weights, small inputs, nothing downloaded: torchvision
resnet18, mobilenet_v3_small, efficientnet_b0 and a small VisionTransformer; Hugging Face BERT
(with a padding mask), GPT-2 and a Llama-style decoder with small configs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

CNN_INPUT = '[{ name = "x", shape = [1, 3, 64, 64], dtype = "float32" }]'
VIT_INPUT = '[{ name = "x", shape = [1, 3, 32, 32], dtype = "float32" }]'
TOKENS_INPUT = '[{ name = "input_ids", shape = [1, 8], dtype = "int64", low = 0, high = 100 }]'
PADDED_INPUT = '"faultbench.models:padded_tokens"'


@dataclass(frozen=True)
class Arch:
    build: Callable[..., nn.Module]
    inputs: str  # the config's `inputs` value (TOML)
    needs: str | None = None  # a package the model needs beyond torchvision
    attention: bool = False  # a transformers model: `build(attention="sdpa")` switches the implementation


def build_resnet18() -> nn.Module:
    from torchvision.models import resnet18

    return resnet18(num_classes=10)


def build_mobilenet_v3_small() -> nn.Module:
    from torchvision.models import mobilenet_v3_small

    return mobilenet_v3_small(num_classes=10)


def build_efficientnet_b0() -> nn.Module:
    from torchvision.models import efficientnet_b0

    return efficientnet_b0(num_classes=10)


def build_vit() -> nn.Module:
    from torchvision.models import VisionTransformer

    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                              dropout=0.1, attention_dropout=0.1, num_classes=10)
    # torchvision initializes the classification head to zeros: the output would be all zeros, which
    # the gate rightly refuses as degenerate. Random head weights, as a trained model would have.
    with torch.no_grad():
        model.heads.head.weight.normal_(0, 32**-0.5)
    return model


def _hf_config(kind: str, attention: str):
    import transformers

    if kind == "bert":
        cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=64, max_position_embeddings=16, hidden_dropout_prob=0.1,
                                      attention_probs_dropout_prob=0.1)
    elif kind == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=16, n_inner=64,
                                      resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1)
        cfg.bos_token_id = cfg.eos_token_id = 0
    else:
        cfg = transformers.LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    cfg.use_cache = False
    cfg.return_dict = False
    # eager by default: attention written out, so its scale is a visible attribute
    cfg._attn_implementation = attention
    return cfg


def build_bert(attention: str = "eager") -> nn.Module:
    import transformers

    return transformers.BertModel(_hf_config("bert", attention), add_pooling_layer=False)


def build_gpt2(attention: str = "eager") -> nn.Module:
    import transformers

    return transformers.GPT2Model(_hf_config("gpt2", attention))


def build_llama(attention: str = "eager") -> nn.Module:
    import transformers

    return transformers.LlamaModel(_hf_config("llama", attention))


def padded_tokens(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two sequences of 8 tokens, the second padded after 5: the mask BERT takes in real use."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 100, (2, 8), generator=g)
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, 5:] = 0
    return ids, mask


ARCHS = {
    "resnet18": Arch(build_resnet18, CNN_INPUT),
    "mobilenet_v3_small": Arch(build_mobilenet_v3_small, CNN_INPUT),
    "efficientnet_b0": Arch(build_efficientnet_b0, CNN_INPUT),
    "vit": Arch(build_vit, VIT_INPUT),
    "bert": Arch(build_bert, PADDED_INPUT, needs="transformers", attention=True),
    "gpt2": Arch(build_gpt2, TOKENS_INPUT, needs="transformers", attention=True),
    "llama": Arch(build_llama, TOKENS_INPUT, needs="transformers", attention=True),
}
