"""Behaviour-preserving refactors of public architectures (random weights), and one that is not:
factories for tests/e2e/test_refactors.py."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from examples import zoo


class Regrouped(nn.Module):
    """tiny-cnn with its blocks wrapped in an nn.Sequential and `fc` renamed `head`: the same modules,
    the same weights, other names."""

    def __init__(self, m: nn.Module):
        super().__init__()
        self.features = nn.Sequential(m.stem, m.block1, m.block2)
        self.pool, self.drop, self.head = m.pool, m.drop, m.fc

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(torch.flatten(self.pool(self.features(x)), 1)))


def cnn_regrouped() -> nn.Module:
    return Regrouped(zoo.tiny_cnn())


def cnn_regrouped_and_changed() -> nn.Module:
    m = Regrouped(zoo.tiny_cnn())
    with torch.no_grad():
        m.head.weight.mul_(1 + 1e-3)
    return m


def cnn_regrouped_then_code_changed() -> nn.Module:
    """The rename above never re-recorded, then a real bug that changes no weight: block2.bn2's eps."""
    m = Regrouped(zoo.tiny_cnn())
    m.features[2].bn2.eps = 1e-2
    return m


def _llama(implementation: str) -> nn.Module:
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    cfg._attn_implementation, cfg.use_cache = implementation, False
    return transformers.LlamaModel(cfg)


def llama_eager() -> nn.Module:
    return _llama("eager")


def llama_sdpa() -> nn.Module:
    return _llama("sdpa")


def _transformer(dropout: bool) -> nn.Module:
    torch.manual_seed(0)
    m = zoo.TinyTransformer()
    if dropout:  # an inactive Dropout inside each block's MLP Sequential: mlp.1 is the Dropout
        for block in m.blocks:
            block.mlp = nn.Sequential(block.mlp[0], nn.Dropout(0.1), *list(block.mlp)[1:])
    return m


def transformer_with_dropout() -> nn.Module:
    return _transformer(True)


def transformer_dropout_deleted() -> nn.Module:
    """The Dropout deleted from the Sequential: the GELU is now ``mlp.1`` and the last Linear ``mlp.2``,
    names the baseline gave to other modules."""
    return _transformer(False)


class ConvBn(nn.Module):
    """A conv and its BatchNorm as two modules of the model (`stem`, `stem_bn`), then a head."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.stem, self.stem_bn = nn.Conv2d(4, 8, 3, padding=1, groups=2), nn.BatchNorm2d(8)
        self.head = nn.Conv2d(8, 4, 1)
        with torch.no_grad():
            self.stem_bn.running_mean.uniform_(-0.5, 0.5)
            self.stem_bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.stem_bn(self.stem(x))))


class ConvBnWrapped(nn.Module):
    """The same pair wrapped: `stem` = Sequential(conv, bn); the conv's old name holds the pair's output."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        m = ConvBn()
        m.stem_bn.eps = eps
        self.stem, self.head = nn.Sequential(m.stem, m.stem_bn), m.head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.stem(x)))


def conv_bn() -> nn.Module:
    return ConvBn().eval()


def conv_bn_wrapped() -> nn.Module:
    return ConvBnWrapped().eval()


def conv_bn_wrapped_eps_changed() -> nn.Module:
    return ConvBnWrapped(1e-3).eval()


def conv_bn_wrapped_conv_changed() -> nn.Module:
    """The wrap, and the conv's weight 1e-4 off: its values match no baseline layer now."""
    m = ConvBnWrapped().eval()
    with torch.no_grad():
        m.stem[0].weight.mul_(1 + 1e-4)
    return m


@dataclasses.dataclass
class Out:
    """Outputs in a dataclass registered for torch.export: the exporter ships each field."""

    y: torch.Tensor
    h: torch.Tensor


torch.export.register_dataclass(Out)


class TwoOut(nn.Module):
    def __init__(self, form: str = "tuple", scale: float = 0.5) -> None:
        super().__init__()
        self.form, self.scale = form, scale
        self.inp, self.head = nn.Linear(6, 12), nn.Linear(12, 4)

    def forward(self, x: torch.Tensor):
        h = torch.tanh(self.inp(x))
        y, aux = self.head(h), h.mean(1) * self.scale
        return Out(y, aux) if self.form == "dataclass" else (y, aux)


def two_outputs() -> nn.Module:
    torch.manual_seed(0)
    return TwoOut().eval()


def two_outputs_as_a_dataclass() -> nn.Module:
    torch.manual_seed(0)
    return TwoOut("dataclass").eval()


def two_outputs_as_a_dataclass_second_changed() -> nn.Module:
    """The second output 1e-4 off, no module's output moved: only the shipped output can see it."""
    torch.manual_seed(0)
    return TwoOut("dataclass", 0.5 * (1 + 1e-4)).eval()


class TwoOutRenamed(nn.Module):
    """`two_outputs` with `inp` renamed `embed`; with ``scale``, its weight changed too (the bias kept)."""

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        base = two_outputs()
        self.embed, self.head = base.inp, base.head
        with torch.no_grad():
            self.embed.weight.mul_(scale)

    def forward(self, x: torch.Tensor):
        h = torch.tanh(self.embed(x))
        return self.head(h), h.mean(1) * 0.5


def two_outputs_renamed() -> nn.Module:
    return TwoOutRenamed().eval()


def two_outputs_renamed_faulted() -> nn.Module:
    return TwoOutRenamed(1 + 1e-4).eval()


def _wrapped(wrap, scale: float = 1.0) -> nn.Module:
    """`two_outputs` with `inp` wrapped (scripted, traced, compiled); with ``scale``, its weight changed."""
    m = two_outputs()
    with torch.no_grad():
        m.inp.weight.mul_(scale)
    m.inp = wrap(m.inp)
    return m


def two_outputs_scripted() -> nn.Module:
    return _wrapped(torch.jit.script)


def two_outputs_traced() -> nn.Module:
    return _wrapped(lambda m: torch.jit.trace(m, torch.zeros(2, 5, 6)))


def two_outputs_scripted_faulted() -> nn.Module:
    return _wrapped(torch.jit.script, 1 + 1e-4)


def two_outputs_compiled() -> nn.Module:
    return torch.compile(_wrapped(torch.compile))  # a compiled module inside a compiled model


def two_outputs_compiled_faulted() -> nn.Module:
    return _wrapped(torch.compile, 1 + 1e-4)


def two_outputs_traced_faulted() -> nn.Module:
    return _wrapped(lambda m: torch.jit.trace(m, torch.zeros(2, 5, 6)), 1 + 1e-4)


class Block(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv1, self.act = nn.Conv2d(c, c, 3, padding=1), nn.GELU()
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(self.act(self.conv1(x)))


class Blocks(nn.Module):
    """Two blocks of the same weights; ``shared``: one block called twice."""

    def __init__(self, shared: bool = False):
        super().__init__()
        torch.manual_seed(0)
        self.stem, self.relu = nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()
        self.b1 = Block(8)
        self.b2 = Block(8)
        self.pool, self.flat, self.fc = nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)
        self.b2 = self.b1 if shared else self.b2
        self.b2.load_state_dict(self.b1.state_dict())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.flat(self.pool(self.b2(self.b1(self.relu(self.stem(x)))))))


def blocks() -> nn.Module:
    return Blocks()


def _off(m: nn.Module, tensor: str) -> nn.Module:
    with torch.no_grad():
        m.get_parameter(tensor).mul_(1 + 1e-5)
    return m


def blocks_shared() -> nn.Module:
    return Blocks(shared=True)


def blocks_shared_faulted() -> nn.Module:
    return _off(Blocks(shared=True), "b1.conv2.weight")


def blocks_shared_faulted_pool_changed() -> nn.Module:
    m = blocks_shared_faulted()
    m.pool = nn.AdaptiveMaxPool2d(1)
    return m


def blocks_wrapped() -> nn.Module:
    return nn.DataParallel(Blocks())


def blocks_wrapped_faulted() -> nn.Module:
    return nn.DataParallel(_off(Blocks(), "b2.conv1.weight"))


class _Cloned(Block):
    """``Block`` returning a copy of its result: the exporter's optimizer drops the copy's Identity."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x).clone()


def blocks_cloned(scale: float = 1.0) -> nn.Module:
    m = Blocks()
    for name in ("b1", "b2"):
        block = _Cloned(8)
        block.load_state_dict(getattr(m, name).state_dict())
        setattr(m, name, block)
    return _off(m, "b2.conv1.weight") if scale != 1.0 else m


def blocks_cloned_faulted() -> nn.Module:
    return blocks_cloned(1 + 1e-5)


class _Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.fc = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3)))


class Siamese(nn.Module):
    """One encoder called on each input, the distance of the encodings through ``head``."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.enc, self.head = _Enc(), nn.Linear(8, 1)
        with torch.no_grad():
            self.enc.bn.running_mean.uniform_(-0.5, 0.5)
            self.enc.bn.running_var.uniform_(0.5, 1.5)
        self.eval()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.head((self.enc(a) - self.enc(b)).abs())


class _Batched(Siamese):
    """The encoder's two calls batched into one: every number the same, every shape inside it doubled."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ea, eb = self.enc(torch.cat([a, b])).chunk(2)
        return self.head((ea - eb).abs())


class _BatchedWrong(Siamese):
    """Batched as ``_Batched``, but the first input twice: shapes inside change, and the output."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ea, eb = self.enc(torch.cat([a, a])).chunk(2)
        return self.head((ea - eb).abs())


def siamese() -> nn.Module:
    return Siamese()


def siamese_batched() -> nn.Module:
    return _Batched()


def siamese_batched_faulted() -> nn.Module:
    return _off(_Batched(), "enc.conv.weight")


def siamese_batched_wrong() -> nn.Module:
    return _BatchedWrong()
