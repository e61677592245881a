"""A small model for the reuse tests, copied into each test's project. Its weights (and buffers) come
from the .npz file ``REUSE_TEST_WEIGHTS`` names, so a test changes them without touching this file
(in one process a module is imported once, from the first project that had it); environment
variables switch code paths only the op trace sees."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.ReLU()
        self.fc = nn.Linear(8, 4)
        self.same = nn.Identity()  # called where REUSE_TEST_IDENTITY is set: a module call and no operation
        self.register_buffer("scale", torch.ones(8))
        self.register_buffer("shift", torch.zeros(8), persistent=False)  # in no state dict
        self.noise = torch.Generator().manual_seed(1)  # a generator the model holds

    def forward(self, x):
        h = self.act(self.conv(x)) * self.scale[:, None, None] + self.shift[:, None, None]
        if os.environ.get("REUSE_TEST_ATTENTION"):  # an operation tagged random that draws nothing here
            q = h.flatten(2).transpose(1, 2)
            h = h + torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.0).transpose(1, 2).reshape(
                h.shape)
        h = h.mean(dim=(2, 3))
        if os.environ.get("REUSE_TEST_IDENTITY"):
            h = self.same(h)
        if os.environ.get("REUSE_TEST_TANH"):  # a code path the source files do not show
            h = torch.tanh(h)
        noise = os.environ.get("REUSE_TEST_NOISE")
        if torch.compiler.is_exporting():  # the exporters take no generator argument: the noise is eager-only
            noise = None if noise in ("own", "held") else noise
        if noise == "own":  # a generator of its own, made in the forward
            h = h + 0.0 * torch.randn(h.shape, generator=torch.Generator().manual_seed(0))
        elif noise == "held":
            h = h + 0.0 * torch.randn(h.shape, generator=self.noise)
        elif noise == "numpy":  # outside torch: a float the trace records, drawn anew each run
            h = h * (1.0 + 0.0 * float(np.random.rand()))
        elif noise == "python":
            h = h * (1.0 + 0.0 * random.random())
        elif noise:
            h = h + 0.0 * torch.randn_like(h)
        if getattr(self, "export_fp16", False) and torch.compiler.is_exporting():  # the exported graph alone
            h = h.half().float()
        return self.fc(h.to(self.fc.weight.dtype))


def _wait_for_use(manifest: Path, seen: Path, limit_s: float = 30.0) -> None:
    """Until the store marks ``manifest``'s entry used (its mtime, set long ago by the test, moves),
    or ``limit_s``; what was seen goes to ``seen``."""
    import time

    end = time.monotonic() + limit_s
    while manifest.stat().st_mtime < 1000 and time.monotonic() < end:
        time.sleep(0.02)
    seen.write_text("used" if manifest.stat().st_mtime >= 1000 else "untouched")


def net() -> nn.Module:
    if os.environ.get("REUSE_TEST_WAIT_FOR"):  # the build waits until the store has read this entry
        _wait_for_use(Path(os.environ["REUSE_TEST_WAIT_FOR"]), Path(os.environ["REUSE_TEST_SEEN"]))
    model = Net()
    stored = Path(os.environ.get("REUSE_TEST_WEIGHTS", "-"))
    if stored.is_file():
        with np.load(stored) as npz, torch.no_grad():
            for name, t in [*model.named_parameters(), *model.named_buffers()]:
                if name in npz.files:
                    t.copy_(torch.from_numpy(npz[name]))
    if os.environ.get("REUSE_TEST_FLOAT64_HEAD"):  # the head in another precision
        model.fc.double()
    if os.environ.get("REUSE_TEST_LEFT_TRAINING"):  # one module left in training mode, the rest in eval
        model.eval()
        model.act.train()
    return model


def net_export_fp16() -> nn.Module:
    """``net`` whose exported graph alone rounds the head's input through float16: its op trace, its
    files and its weights are ``net``'s; only the factory tells the two apart."""
    model = net()
    model.export_fp16 = True
    return model


def bert_sdpa() -> nn.Module:
    """A small BERT as transformers builds it by default: SDPA attention, dropout in its config."""
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                vocab_size=64, max_position_embeddings=32))
