"""Small models for tests/e2e/test_refactors_inside.py: refactors inside a module (a BatchNorm folded
into the conv before it, q/k/v merged into one projection, a Linear split in two), each with a faulted
twin; zero-initialized position-bias tables and a module shared between calls; a transform that
changes the weights of a convolution the exporter folded its BatchNorm into; and an embedding whose rows
past the ids drawn change."""

from __future__ import annotations

import copy
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.act = nn.ReLU()
        with torch.no_grad():  # statistics as training leaves them: folding them is no identity
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Attention(nn.Module):
    def __init__(self, d: int = 8):
        super().__init__()
        self.q, self.k, self.v, self.out = (nn.Linear(d, d) for _ in range(4))
        self.scale = d ** -0.5

    def project(self, x):
        return self.q(x), self.k(x), self.v(x)

    def forward(self, x):
        q, k, v = self.project(x)
        return self.out(torch.softmax(q @ k.transpose(-1, -2) * self.scale, dim=-1) @ v)


class MergedAttention(Attention):
    """q, k and v computed by one Linear, kept under the name `q`; `k` and `v` gone."""

    def __init__(self, a: Attention):
        nn.Module.__init__(self)
        d = a.q.in_features
        self.q, self.out, self.scale = nn.Linear(d, 3 * d), a.out, a.scale
        with torch.no_grad():
            self.q.weight.copy_(torch.cat([a.q.weight, a.k.weight, a.v.weight]))
            self.q.bias.copy_(torch.cat([a.q.bias, a.k.bias, a.v.bias]))

    def project(self, x):
        return self.q(x).chunk(3, dim=-1)


class AddBias(nn.Module):
    def __init__(self, bias: torch.Tensor):
        super().__init__()
        self.bias = nn.Parameter(bias.detach().clone())

    def forward(self, x):
        return x + self.bias


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = Block()
        self.attn = Attention()
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        t = self.stem(x).flatten(2).transpose(1, 2)
        t = t + self.attn(t)
        t = t + self.mlp(t)
        return self.head(t.mean(1))


def net() -> nn.Module:
    return Net()


def _scaled(m: nn.Module, path: str, factor: float = 1 + 1e-3) -> nn.Module:
    with torch.no_grad():
        m.get_submodule(path).weight.mul_(factor)
    return m


def folded() -> nn.Module:
    """The stem's BatchNorm folded into its conv (in float32, as torch.nn.utils.fusion does)."""
    m = Net().eval()
    m.stem.conv, m.stem.bn = fuse_conv_bn_eval(m.stem.conv, m.stem.bn), nn.Identity()
    return m.eval()


def merged() -> nn.Module:
    m = Net()
    m.attn = MergedAttention(m.attn)
    return m


def split() -> nn.Module:
    """`mlp.0` split into the Linear without its bias and a module adding it (the indices after it shift)."""
    m = Net()
    first, rest = m.mlp[0], list(m.mlp)[1:]
    bias, first.bias = first.bias, None
    m.mlp = nn.Sequential(first, AddBias(bias), *rest)
    return m


def folded_faulted() -> nn.Module:
    return _scaled(folded(), "stem.conv")


def merged_faulted() -> nn.Module:
    return _scaled(merged(), "attn.q")


def split_faulted() -> nn.Module:
    return _scaled(split(), "mlp.0")


class Stacked(nn.Module):
    """A Linear split into two stacked halves whose outputs are concatenated: the same values, computed
    in two parts."""

    def __init__(self, whole: nn.Linear):
        super().__init__()
        half = whole.out_features // 2
        self.a, self.b = nn.Linear(whole.in_features, half), nn.Linear(whole.in_features, half)
        with torch.no_grad():
            for part, rows in ((self.a, slice(None, half)), (self.b, slice(half, None))):
                part.weight.copy_(whole.weight[rows])
                part.bias.copy_(whole.bias[rows])

    def forward(self, x):
        return torch.cat([self.a(x), self.b(x)], dim=-1)


def stacked() -> nn.Module:
    m = Net()
    m.mlp[0] = Stacked(m.mlp[0])
    return m


def stacked_faulted() -> nn.Module:
    """The split, and one weight of its first half changed by 1e-4: a weight change, smaller than what
    float32 rounding of a re-computed weight (a fold) may move the outputs by."""
    m = stacked()
    with torch.no_grad():
        m.mlp[0].a.weight[0, 0] *= 1 + 1e-4
    return m


def stacked_rounding() -> nn.Module:
    """The split, and its second half's weights scaled by 1 + 3e-7: within float32's rounding."""
    m = stacked()
    with torch.no_grad():
        m.mlp[0].b.weight.mul_(1 + 3e-7)
    return m


def merged_rounding() -> nn.Module:
    """The merge, and the merged projection's weights scaled by 1 + 3e-7."""
    return _scaled(merged(), "attn.q", 1 + 3e-7)


def split_rounding() -> nn.Module:
    """The bias split off `mlp.0`, and the module that now adds it holding it scaled by 1 + 3e-7."""
    m = split()
    with torch.no_grad():
        m.mlp[1].bias.mul_(1 + 3e-7)
    return m


def conv_folded_into_bn_faulted(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A transform: the weights of the graph's first Conv, the stem's conv with its BatchNorm folded in,
    scaled by 1.001."""
    conv = next(n for n in proto.graph.node if n.op_type == "Conv")
    for init in proto.graph.initializer:
        if init.name == conv.input[1]:
            init.CopyFrom(numpy_helper.from_array((numpy_helper.to_array(init) * np.float32(1.001)), init.name))
    return proto


class RelBias(nn.Module):
    """A relative-position bias table, zero-initialized as libraries do: its output is all zeros."""

    def __init__(self, t: int = 8):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(2 * t - 1))
        self.register_buffer("index", torch.arange(t)[:, None] - torch.arange(t)[None, :] + t - 1, persistent=False)

    def forward(self, x):
        return self.table[self.index].expand(x.shape[0], -1, -1)


class BiasedAttention(Attention):
    def __init__(self, d: int = 16):
        super().__init__(d)
        self.rel = RelBias()

    def forward(self, x, shared):
        q, k, v = self.project(x)
        scores = q @ k.transpose(-1, -2) * self.scale + self.rel(x) + shared
        return self.out(torch.softmax(scores, dim=-1) @ v)


class Tables(nn.Module):
    """Two attention blocks, each with its own zero-initialized table, and a zero-initialized table
    module shared by both (called once per block: `shared`, `shared#2`)."""

    def __init__(self):
        super().__init__()
        self.shared = RelBias()
        self.blocks = nn.ModuleList(BiasedAttention() for _ in range(2))
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x, self.shared(x))
        return self.head(x.mean(1))


def tables() -> nn.Module:
    return Tables()


def tables_faulted() -> nn.Module:
    return _scaled(Tables(), "blocks.1.q")


class Fading(nn.Module):
    """24 x (Linear + GELU) at their default initialization: a contracting network. A change of one
    layer fades by about 0.3 per layer after it, so the outputs hold to 1e-12 whatever happens early on."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*(nn.Sequential(nn.Linear(16, 16), nn.GELU()) for _ in range(24)))
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.blocks(x))


def fading() -> nn.Module:
    return Fading()


def fading_faulted() -> nn.Module:
    return _scaled(Fading(), "blocks.4.0")


def fading_split() -> nn.Module:
    """`blocks.4.0` split into the Linear without its bias and a module adding it: a refactor."""
    m = Fading()
    first = m.blocks[4][0]
    bias, first.bias = first.bias, None
    m.blocks[4] = nn.Sequential(first, AddBias(bias), nn.GELU())
    return m


class Hidden(nn.Module):
    """Three residual blocks whose branch barely reaches their output, as before training: a layer scale
    at 1e-6 (ConvNeXt, CaiT), a zero-initialized gate (ReZero, SkipInit, adapters), and LoRA with B = 0.
    A weight change inside a branch moves the branch and hardly (or not at all) the block's output."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(16, 16)
        self.scaled = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
        self.layer_scale = nn.Parameter(torch.full((16,), 1e-6))
        self.gated = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
        self.gate = nn.Parameter(torch.zeros(()))
        self.base = nn.Linear(16, 16)
        self.lora_a, self.lora_b = nn.Linear(16, 4, bias=False), nn.Linear(4, 16, bias=False)
        nn.init.zeros_(self.lora_b.weight)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.layer_scale * self.scaled(x)
        x = x + self.gate * self.gated(x)
        x = self.base(x) + self.lora_b(self.lora_a(x))
        return self.head(x)


def hidden() -> nn.Module:
    return Hidden()


def hidden_refactored() -> nn.Module:
    """`stem` split into the Linear without its bias and a module adding it: a refactor before every
    branch."""
    m = Hidden()
    bias, m.stem.bias = m.stem.bias, None
    m.stem = nn.Sequential(m.stem, AddBias(bias))
    return m


HIDDEN_FAULTS = {"scaled": "scaled.0", "gated": "gated.0", "lora": "lora_a"}


def hidden_faulted(branch: str, refactored: bool) -> nn.Module:
    return _scaled(hidden_refactored() if refactored else Hidden(), HIDDEN_FAULTS[branch])


def hidden_scaled() -> nn.Module:
    return hidden_faulted("scaled", False)


def hidden_gated() -> nn.Module:
    return hidden_faulted("gated", False)


def hidden_lora() -> nn.Module:
    return hidden_faulted("lora", False)


def hidden_scaled_refactored() -> nn.Module:
    return hidden_faulted("scaled", True)


def hidden_gated_refactored() -> nn.Module:
    return hidden_faulted("gated", True)


def hidden_lora_refactored() -> nn.Module:
    return hidden_faulted("lora", True)


class ScaledBlock(nn.Module):
    """A residual block with its layer scale inside it (ConvNeXt, CaiT at 1e-6): the block's output, not the
    model's, is what a move inside it is excused by. ``moved``: the child called after the layer scale,
    not before it (the block's values are the same only where that child is an identity)."""

    def __init__(self, inline: str | None = None, moved: str | None = None):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 16)
        self.act = nn.GELU() if inline is None else None  # inlined: a call, or the tanh approximation's
        self.drop = nn.Dropout(0.1)  # in eval: an identity
        self.inline, self.moved = inline, moved
        self.gamma = nn.Parameter(torch.full((16,), 1e-6))

    def forward(self, x):
        h = self.fc1(x)
        if self.moved == "act":
            return x + self.act(self.gamma * self.drop(self.fc2(h)))
        h = self.act(h) if self.act is not None else nn.functional.gelu(h, approximate=self.inline)
        if self.moved == "drop":
            return x + self.drop(self.gamma * self.fc2(h))
        return x + self.gamma * self.drop(self.fc2(h))


class LayerScaled(nn.Module):
    def __init__(self, inline: str | None = None, moved: str | None = None):
        super().__init__()
        torch.manual_seed(0)
        self.stem, self.block, self.head = nn.Linear(16, 16), ScaledBlock(inline, moved), nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.block(self.stem(x)))


def layer_scaled() -> nn.Module:
    return LayerScaled()


def layer_scaled_inlined() -> nn.Module:
    return LayerScaled("none")


def layer_scaled_inlined_tanh() -> nn.Module:
    return LayerScaled("tanh")


def layer_scaled_drop_moved() -> nn.Module:
    return LayerScaled(moved="drop")


def layer_scaled_act_moved() -> nn.Module:
    return LayerScaled(moved="act")


class ScaledFirst(Attention):
    """The same attention, the scale applied to q before the product: a refactor of `attn`'s code."""

    def forward(self, x):
        q, k, v = self.project(x)
        return self.out(torch.softmax((q * self.scale) @ k.transpose(-1, -2), dim=-1) @ v)


def attn_refactored() -> nn.Module:
    m = Net()
    m.attn.__class__ = ScaledFirst
    return m


def attn_refactored_faulted(factor: float = 1 + 3e-7) -> nn.Module:
    """The refactor of `attn`, and `attn.q`'s weights scaled by a factor whose drift stays within float32's
    rounding budget: the module whose code changed holds the tensor, which is still a weight change."""
    m = attn_refactored()
    with torch.no_grad():
        m.attn.q.weight.mul_(factor)
    return m


def attn_refactored_faulted_1e4() -> nn.Module:
    return attn_refactored_faulted(1 + 1e-4)


def mlp_tanh() -> nn.Module:
    """A code change whose drift is under a loosened floor: GELU's tanh approximation."""
    m = Net()
    m.mlp[1] = nn.GELU(approximate="tanh")
    return m


def stem_bn_eps() -> nn.Module:
    """A hyperparameter changed by a tenth: the drift is under 1e-6, far past float64's noise."""
    m = Net()
    m.stem.bn.eps = 1.1e-5
    return m


def merged_out_faulted() -> nn.Module:
    """The merge, and `attn.out`'s weights (kept, in the module that lost `k` and `v`) scaled within
    float32's rounding budget: still a weight change."""
    m = merged()
    with torch.no_grad():
        m.attn.out.weight.mul_(1 + 3e-7)
    return m


def folded_attn_scale() -> nn.Module:
    """The fold, and after it attention's scale moved by 1e-7: code of its own, not inherited rounding."""
    m = folded()
    m.attn.scale *= 1 + 1e-7
    return m



def folded_head_faulted() -> nn.Module:
    """The fold, and the head's weights scaled: the outputs move, so no call around the attention (a
    top-level module whose float32 rounding is the fold's) holds. The head changed, not the attention."""
    return _scaled(folded(), "head")


def folded_head_rounding() -> nn.Module:
    """The same with the head's weights scaled within float32's rounding budget: still a weight change."""
    return _scaled(folded(), "head", 1 + 3e-7)


class Tied(nn.Module):
    """An input embedding tied to the output head: `head.weight` is read first by the model's own
    forward, before `blocks`, not by `head`."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 16))
        self.head = nn.Linear(16, 30, bias=False)

    def forward(self, ids):
        x = nn.functional.embedding(ids, self.head.weight)
        return self.head(x + self.blocks(x))


def tied() -> nn.Module:
    """`TIED_SCALE` scales the head's weights: a checkpoint changed, the code and factory the same."""
    return _scaled(Tied(), "head", float(os.environ.get("TIED_SCALE", "1")))


class Flat(nn.Module):
    """A block's layers at the top level (a ResNet's stem): no call around them but the model's."""

    def __init__(self):
        super().__init__()
        block = Block()
        self.conv, self.bn, self.act = block.conv, block.bn, block.act
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.act(self.bn(self.conv(x))).mean((2, 3)))


def flat() -> nn.Module:
    return Flat()


def flat_folded(head: float = 1.0) -> nn.Module:
    """The BatchNorm folded into the conv before it, and the head's weights scaled by ``head``."""
    m = Flat().eval()
    m.conv, m.bn = fuse_conv_bn_eval(m.conv, m.bn), nn.Identity()
    return _scaled(m, "head", head)


def flat_folded_head_faulted() -> nn.Module:
    return flat_folded(1 + 1e-3)


def flat_skipped() -> nn.Module:
    """The BatchNorm dropped, not folded: its output now is the conv's, an earlier layer's values."""
    m = Flat()
    m.bn = nn.Identity()
    return m



class Chain(nn.Module):
    """Linear layers one after another at the top level; `pre`, when set, runs before `fc2`."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.head = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 4)
        self.pre: nn.Module | None = None

    def forward(self, x):
        x = self.fc1(x)
        if self.pre is not None:
            x = self.pre(x)
        return self.head(torch.relu(self.fc2(x)))


def chain() -> nn.Module:
    return Chain()


def chain_fc2_twice() -> nn.Module:
    """`fc2` run twice: a copy of it, `pre`, before it (a layer moved and its old call kept)."""
    m = Chain()
    m.pre = copy.deepcopy(m.fc2)
    return m

class ScaledInput(Net):
    """The model's own forward scales its input by 1 + 3e-7: code, before any weight is re-expressed."""

    def forward(self, x):
        return super().forward(x * (1 + 3e-7))


def split_scaled_input() -> nn.Module:
    m = split()
    m.__class__ = ScaledInput
    return m


class TokenMlp(nn.Module):
    """Linear layers over tokens; ``flat``: applied to the tokens flattened to rows and reshaped back (the
    same values in the same order, another shape: a refactor); ``faulted``: flattened time-major and never
    put back (values land on other tokens)."""

    def __init__(self, flat: bool = False, faulted: bool = False):
        super().__init__()
        self.flat, self.faulted = flat, faulted
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 16)

    def forward(self, x):
        if self.faulted:
            return self.fc2(torch.relu(self.fc1(x.transpose(0, 1).reshape(-1, 16)))).reshape(x.shape)
        if self.flat:
            return self.fc2(torch.relu(self.fc1(x.reshape(-1, 16)))).reshape(x.shape)
        return self.fc2(torch.relu(self.fc1(x)))


class Tokens(nn.Module):
    def __init__(self, **how: bool):
        super().__init__()
        torch.manual_seed(0)
        self.mlp, self.head = TokenMlp(**how), nn.Linear(16, 3)

    def forward(self, x):
        return self.head(x + self.mlp(x))


def tokens() -> nn.Module:
    return Tokens().eval()


def tokens_flat() -> nn.Module:
    return Tokens(flat=True).eval()


def tokens_flat_faulted() -> nn.Module:
    return Tokens(flat=True, faulted=True).eval()


class Sensor(nn.Module):
    """Raw readings (290..310) normalized by the model's first BatchNorm, as training left it: float32
    runs it with errors of a few 1e-6, above a fixed rounding budget."""

    def __init__(self):
        super().__init__()
        self.fc1, self.bn, self.fc2 = nn.Linear(16, 32), nn.BatchNorm1d(32, momentum=None), nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def sensor() -> nn.Module:
    torch.manual_seed(0)
    m = Sensor().train()
    with torch.no_grad():
        for _ in range(20):
            m(torch.rand(256, 16) * 20 + 290)
    return m.eval()


def sensor_folded() -> nn.Module:
    """The BatchNorm folded into the Linear before it (in float32): the fold's rounding is float32's."""
    m = sensor()
    bn, fc1 = m.bn, m.fc1
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    with torch.no_grad():
        fc1.weight.mul_(scale[:, None])
        fc1.bias.copy_((fc1.bias - bn.running_mean) * scale + bn.bias)
    m.bn = nn.Identity()
    return m


class SensorScaled(Sensor):
    """A code change a float32 run's error there would hide (the output 2e-6 larger) and, beside it, a new
    buffer nothing reads (``version``): no weights were computed anew."""

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))) * (1 + 2e-6 * self.faulted))


def sensor_versioned(fault: bool = True, buffer: bool = True) -> nn.Module:
    m = sensor()
    m.__class__, m.faulted = SensorScaled, fault
    if buffer:
        m.register_buffer("version", torch.tensor(2.0))
    return m


def sensor_scaled() -> nn.Module:
    return sensor_versioned(buffer=False)


def sensor_versioned_only() -> nn.Module:
    return sensor_versioned(fault=False)


class Normed(nn.Module):
    """The model's own forward normalizes between its layers (a functional layer_norm, its eps a literal)."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.stem, self.fc1, self.fc2, self.eps = Block(), nn.Linear(8, 16), nn.Linear(16, 4), eps

    def forward(self, x):
        x = torch.nn.functional.layer_norm(15 * self.fc1(self.stem(x).mean((2, 3))), (16,), eps=self.eps)
        return self.fc2(torch.relu(x))


def normed() -> nn.Module:
    torch.manual_seed(0)
    return Normed().eval()


def normed_folded(eps: float = 1e-5) -> nn.Module:
    m = normed()
    m.stem.conv, m.stem.bn, m.eps = fuse_conv_bn_eval(m.stem.conv, m.stem.bn), nn.Identity(), eps
    return m


def normed_folded_eps() -> nn.Module:
    """The fold, and the root's own forward changed: the layer_norm's eps 1e-5 -> 1e-6."""
    return normed_folded(1e-6)



class Lookup(nn.Module):
    """An embedding of 40 rows, looked up by ids the config draws below 30: rows 30 on are never read."""

    def __init__(self):
        super().__init__()
        self.embed, self.head = nn.Embedding(40, 8), nn.Linear(8, 4)

    def forward(self, ids):
        return self.head(self.embed(ids))


def lookup(rows: slice = slice(0, 0)) -> nn.Module:
    torch.manual_seed(0)
    m = Lookup()
    with torch.no_grad():
        m.embed.weight[rows].mul_(1 + 1e-5)
    return m


def lookup_unread_row() -> nn.Module:
    return lookup(slice(35, 36))


def lookup_read_rows() -> nn.Module:
    return lookup(slice(0, 30))


def lookup_wrapped() -> nn.Module:
    """The head wrapped in a Sequential: its tensors renamed, their values the same."""
    m = lookup()
    m.head = nn.Sequential(m.head)
    return m
