"""Small models from ``transformers`` configurations, random weights (nothing is downloaded).

Llama-, Mistral- and Qwen2-style decoders compute RMSNorm and the attention softmax in float32
inside their own forward (``x.to(torch.float32)``, ``softmax(..., dtype=torch.float32)``), the
way most current LLM code does; BERT and GPT-2 do not. The gate's float64 reference promotes
those casts (gate/runners/promotion.py); these factories are what its tests and
``scripts/bench_promotion.py`` run. Inputs: ``input_ids`` of shape [1, 16], values 0..127.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

VOCAB, HIDDEN, LAYERS, HEADS = 128, 64, 2, 4


def _decoder(name: str, attn: str = "eager", **extra) -> nn.Module:
    import transformers

    config = getattr(transformers, f"{name}Config")(
        hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=64, use_cache=False,
        attn_implementation=attn, **extra)
    return getattr(transformers, f"{name}ForCausalLM")(config)


def llama() -> nn.Module:
    return _decoder("Llama")


def mistral() -> nn.Module:
    return _decoder("Mistral", sliding_window=None)


def qwen2() -> nn.Module:
    return _decoder("Qwen2")


def bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
                                num_attention_heads=HEADS, vocab_size=VOCAB, max_position_embeddings=64,
                                attn_implementation="eager"))


def gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, vocab_size=VOCAB, n_positions=64,
                                      bos_token_id=0, eos_token_id=0, use_cache=False, attn_implementation="eager"))


def _refactored_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """Llama's eager attention with the softmax written as exp(x - logsumexp(x)), still in float32:
    the same math, other rounding."""
    from transformers.models.llama.modeling_llama import repeat_kv

    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = weights.to(torch.float32)
    weights = torch.exp(weights - torch.logsumexp(weights, dim=-1, keepdim=True)).to(query.dtype)
    output = torch.matmul(weights, value_states).transpose(1, 2).contiguous()
    return output, weights


def llama_refactored() -> nn.Module:
    """The same model as ``llama`` (same weights): a refactor that changes no math."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register("refactored", _refactored_attention)
    AttentionMaskInterface.register("refactored", eager_mask)  # the additive mask eager attention takes
    return _decoder("Llama", attn="refactored")


def llama_weight_1e6() -> nn.Module:
    """``llama`` with one MLP weight scaled by 1 + 1e-6: a fault the float64 reference must name."""
    model = llama()
    with torch.no_grad():
        model.model.layers[1].mlp.down_proj.weight.mul_(1 + 1e-6)
    return model


class NumpyRoundTrip(nn.Module):
    """A post-processing step that leaves torch for NumPy in float32: no cast to promote."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.onnx.is_in_onnx_export() or torch.compiler.is_compiling():
            return torch.tanh(x.to(torch.float32)).to(x.dtype)  # the same step, in the graph
        y = np.tanh(x.detach().numpy().astype(np.float32))
        return torch.from_numpy(y).to(x.dtype)


class LlamaWithNumpy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = llama()
        self.post = NumpyRoundTrip()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.post(self.body(input_ids=input_ids).logits)


def llama_with_numpy() -> nn.Module:
    return LlamaWithNumpy()


class BertLike(nn.Module):
    """``bert`` returning its last hidden state (a tensor: what the ORT transformer optimizer
    expects of a BERT graph's output)."""

    def __init__(self):
        super().__init__()
        self.bert = bert()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=input_ids).last_hidden_state


def bert_like() -> nn.Module:
    return BertLike()


def gpt2_small() -> nn.Module:
    """GPT-2's 124M configuration (12 layers, 768 wide, 50257 tokens), random weights, no head."""
    from transformers import GPT2Config, GPT2Model

    return GPT2Model(GPT2Config(use_cache=False, attn_implementation="eager"))
