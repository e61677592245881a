"""A zoo row's specification and the input makers rows share.

Every input is made from the seed the gate passes (``inputs = "module:callable"`` in the config), so
a row's inputs are the same in every process and on every machine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

Inputs = Callable[[int], tuple[torch.Tensor, ...]]


@dataclass(frozen=True)
class Spec:
    name: str  # the row and the gate's model name: [a-z0-9._-]+
    family: str  # e.g. "torchvision/classification", "transformers/decoder"
    build: Callable[[], nn.Module]  # random weights, nothing downloaded
    inputs: Inputs
    needs: str = "torchvision"  # the package the row imports beyond torch (a missing one skips the row)
    note: str = ""  # how the row is called, when it is not `model(*inputs)`


class Keywords(nn.Module):
    """What a user's wrapper does with a model that takes keywords: ``model(name=tensor, ...)``."""

    def __init__(self, model: nn.Module, names: Sequence[str]) -> None:
        super().__init__()
        self.model = model
        self.names = tuple(names)

    def forward(self, *tensors: torch.Tensor):
        return self.model(**dict(zip(self.names, tensors, strict=True)))


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def images(*shapes: Sequence[int]) -> Inputs:
    """One N(0, 1) float32 tensor per shape."""
    def make(seed: int) -> tuple[torch.Tensor, ...]:
        g = _gen(seed)
        return tuple(torch.randn(*shape, generator=g) for shape in shapes)
    return make


def padded_mask(batch: int, seq: int, keep: int) -> torch.Tensor:
    """All ones, the last row padded after ``keep`` tokens: a batch of unequal lengths."""
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if batch > 1:
        mask[-1, keep:] = 0
    return mask


def tokens(batch: int = 2, seq: int = 8, vocab: int = 100, mask: bool = True, low: int = 4) -> Inputs:
    """Token ids in [low, vocab) (below ``low``: the special tokens), and the padding mask when asked."""
    def make(seed: int) -> tuple[torch.Tensor, ...]:
        ids = torch.randint(low, vocab, (batch, seq), generator=_gen(seed))
        return (ids, padded_mask(batch, seq, seq - 3)) if mask else (ids,)
    return make


def seq2seq(batch: int = 2, src: int = 8, tgt: int = 5, vocab: int = 100, low: int = 4) -> Inputs:
    """(input_ids, attention_mask, decoder_input_ids): an encoder-decoder's training-free forward."""
    def make(seed: int) -> tuple[torch.Tensor, ...]:
        g = _gen(seed)
        ids = torch.randint(low, vocab, (batch, src), generator=g)
        dec = torch.randint(low, vocab, (batch, tgt), generator=g)
        return ids, padded_mask(batch, src, src - 3), dec
    return make
