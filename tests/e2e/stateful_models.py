"""Models whose forward leaves state outside their parameters, for the tests of runs that must
not contaminate each other (``test_isolated_runs``, ``integration/test_pristine``)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class BiasCache(nn.Module):
    """As timm's LeViT attention: biases gathered once in eval mode and kept in a plain dict (not
    a buffer), which its own ``_apply`` and ``train`` clear."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.biases = nn.Parameter(torch.randn(4, width))
        self.register_buffer("idx", torch.arange(width) % 4, persistent=False)
        self.ab: dict[str, torch.Tensor] = {}

    def bias(self, device: torch.device) -> torch.Tensor:
        if self.training:
            return self.biases[self.idx]
        key = str(device)
        if key not in self.ab:
            self.ab[key] = self.biases[self.idx]
        return self.ab[key]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) @ self.bias(x.device)

    def train(self, mode: bool = True):
        super().train(mode)
        if mode:
            self.ab = {}
        return self

    def _apply(self, fn, recurse=True):
        self.ab = {}
        return super()._apply(fn, recurse)


class TableCache(nn.Module):
    """A table computed on the first call and kept in a plain attribute, with no ``_apply`` of its
    own (rotary tables, masks): a float64 table read by a float32 run fails its matmul; a float32
    one read by the float64 reference would make it float32."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.register_buffer("freq", torch.linspace(0.1, 1.0, width))
        self.table: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.table is None:
            self.table = torch.cos(self.freq[:, None] * self.freq[None, :])
        return x @ self.table


class HalfTableCache(TableCache):
    """Keeps its table in float16, to save memory: the first call reads the table it computed, every later
    call the float16 copy."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.table is None:
            table = torch.cos(self.freq[:, None] * self.freq[None, :])
            self.table = table.half()
        else:
            table = self.table.to(x.dtype)
        return x @ table


class CountsInPython(nn.Module):
    """Counts its calls in a Python int, or in a list it appends to; from the second call on its output moves
    by ``step`` (none: a counter that changes nothing)."""

    def __init__(self, step: float = 0.0, in_list: bool = False):
        super().__init__()
        self.lin, self.step = nn.Linear(16, 16), step
        self.calls: int | list[int] = [] if in_list else 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if isinstance(self.calls, list):
            self.calls.append(1)
        else:
            self.calls += 1
        n = self.calls if isinstance(self.calls, int) else len(self.calls)
        return self.lin(x) * (1 + self.step * (n > 1))


class Net(nn.Module):
    def __init__(self, block: nn.Module):
        super().__init__()
        self.inp = nn.Linear(16, 16)
        self.block = block
        self.out = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.block(self.inp(x))))


class CountsCalls(nn.Module):
    """Writes into its buffer in place and adds an attribute on every call; what it returns does not depend
    on how many calls came before (``buffer_after_use`` is the one whose does)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.last = x.detach()
        return self.lin(x) * (self.calls > 0)


class ChangesItsWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.lin.weight.mul_(1.5)
        return self.lin(x)


class RescalesOnce(nn.Module):
    """As transformers' RWKV: its first forward in eval mode halves its layer's weights in place (an
    inference optimization against overflow), says so in a flag, and scales the layer's output back."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.rescaled = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training and not self.rescaled:
            with torch.no_grad():
                self.lin.weight.div_(2)
                self.lin.bias.div_(2)
            self.rescaled = True
        y = self.lin(x)
        return y * 2 if self.rescaled else y


RUNS = [0]  # state no restore reaches: a module-level counter


class DriftsEveryRun(nn.Module):
    """Changes its weights in place by a factor that depends on how many runs came before."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        RUNS[0] += 1
        with torch.no_grad():
            self.lin.weight.mul_(1 + 0.01 * RUNS[0])
        return self.lin(x)


class DecaysAfterUse(nn.Module):
    """Scales its weights in place after each call: every run from the state as built agrees, and the
    second call in a row gives other outputs than the first."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.lin(x)
        with torch.no_grad():
            self.lin.weight.mul_(1 + 1e-4)
        return out


class Lazy(nn.Module):
    """Lazy modules: their parameters exist only after the first forward."""

    def __init__(self):
        super().__init__()
        self.lin = nn.LazyLinear(16)
        self.norm = nn.LazyBatchNorm1d()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.lin(x))


class HooksOnFirstCall(nn.Module):
    """Installs forward hooks on its children at its first call and flags that it did (as
    transformers' output capturing does); a hook that runs twice doubles its child's output."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.keep = self.lin.register_forward_hook(lambda _m, _a, out: out + 1.0)  # the factory's own

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not getattr(self, "_hooks_installed", False):
            self.lin.register_forward_hook(lambda _m, _a, out: out * 2.0)
            self._hooks_installed = True
        return self.lin(x)


def bias_cache() -> nn.Module:
    return Net(BiasCache())


def table_cache() -> nn.Module:
    return Net(TableCache())


def half_table_cache() -> nn.Module:
    return Net(HalfTableCache())


def counts_in_an_int() -> nn.Module:
    return Net(CountsInPython(1e-3))


def counts_in_a_list() -> nn.Module:
    return Net(CountsInPython(1e-3, in_list=True))


def counts_harmlessly() -> nn.Module:
    return Net(CountsInPython())


def counts_harmlessly_in_a_list() -> nn.Module:
    return Net(CountsInPython(in_list=True))


def counts_calls() -> nn.Module:
    return Net(CountsCalls())


def changes_its_weights() -> nn.Module:
    return Net(ChangesItsWeights())


def changes_its_weights_unseeded() -> nn.Module:
    """Built with other weights on every call (a random draw the seed does not reach)."""
    m = Net(ChangesItsWeights())
    with torch.no_grad():
        m.inp.weight.add_(torch.from_numpy(np.random.default_rng().normal(size=(16, 16))).float())
    return m


def rescales_once() -> nn.Module:
    return Net(RescalesOnce())


def rescales_once_faulted() -> nn.Module:
    m = rescales_once()
    with torch.no_grad():
        m.block.lin.weight.mul_(1 + 1e-3)  # the weights its forward rescales
    return m


def drifts_every_run() -> nn.Module:
    return Net(DriftsEveryRun())


def decays_after_use() -> nn.Module:
    return Net(DecaysAfterUse())


def lazy() -> nn.Module:
    return Net(Lazy())



def hooks_on_first_call() -> nn.Module:
    return Net(HooksOnFirstCall())


class BufferAfterUse(nn.Module):
    """Running statistics updated in eval mode too, after they are used (an ``if self.training`` guard
    dropped): every run from the state as built agrees, the second call in a row does not."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.register_buffer("mean", torch.zeros(16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.lin(x - self.mean)
        with torch.no_grad():
            self.mean.mul_(0.9).add_(0.1 * x.mean(0))
        return out


class CacheRefilled(nn.Module):
    """A buffer used as scratch: written in place on every call, wholly, before it is read."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.register_buffer("scratch", torch.zeros(2, 16), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.scratch.copy_(x)
        return self.lin(self.scratch)


class KernelStatistics(nn.Module):
    """BufferAfterUse's statistics, written by batch_norm's kernel in training mode from an eval-mode module:
    the kernel writes them without moving their version counters."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.register_buffer("mean", torch.zeros(16))
        self.register_buffer("var", torch.ones(16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.lin(nn.functional.batch_norm(x, self.mean, self.var, training=False))
        nn.functional.batch_norm(x, self.mean, self.var, training=True, momentum=0.5)
        return out


def buffer_after_use() -> nn.Module:
    return Net(BufferAfterUse())


def kernel_statistics() -> nn.Module:
    return Net(KernelStatistics())


def cache_refilled() -> nn.Module:
    return Net(CacheRefilled())


class WritesItsInput(nn.Module):
    """Scales its input by 1/div first: out of place, or in place (``x.div_``, an in-place first
    activation): one call computes the same either way, whatever runs came before."""

    def __init__(self, div: float, in_place: bool, act: nn.Module | None = None):
        super().__init__()
        torch.manual_seed(0)
        self.div, self.in_place, self.act, self.lin = div, in_place, act, nn.Linear(16, 8)

    def forward(self, x):
        if self.act is not None:  # the activation first, on the input itself
            return self.lin(self.act(x))
        return self.lin(x.div_(self.div) if self.in_place else x / self.div)


def halves() -> nn.Module:
    return WritesItsInput(2.0, False)


def halves_in_place() -> nn.Module:
    return WritesItsInput(2.0, True)


def quarters_in_place() -> nn.Module:  # a fault against `halves`
    return WritesItsInput(4.0, True)


def leaky() -> nn.Module:
    return WritesItsInput(1.0, False, nn.LeakyReLU(0.1))


def leaky_in_place() -> nn.Module:
    return WritesItsInput(1.0, False, nn.LeakyReLU(0.1, inplace=True))


def drawn_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    """Inputs from torch's global generator, as many examples write them."""
    return (torch.randn(2, 16),)


def with_unused_head() -> nn.Module:
    """`halves` and a head it never calls: its initialisation draws more numbers."""
    m = halves()
    m.head = nn.Linear(16, 64)
    return m
