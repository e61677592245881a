"""The float64 reference without a float64 copy of the model: each module widened as it runs
gives the very fingerprints a ``.double()`` deep copy gives, and leaves the model float32."""

from __future__ import annotations

import copy

import pytest
import torch

from examples import zoo
from gate.runners import reference, widen


def _both(factory, x):
    torch.manual_seed(0)
    model = factory().eval()
    copy, inputs = reference.as_float64(model, x)
    expected, _, _ = reference._capture(copy, inputs, True)
    with widen.float64_weights(model):
        got, _, _ = reference._capture(model, inputs, True)
    return model, expected, got


def test_widened_reference_is_bit_identical_to_a_float64_copy():
    # tiny-transformer's nn.MultiheadAttention reads out_proj.weight without calling out_proj.
    for factory, x in ((zoo.tiny_cnn, torch.randn(2, 3, 16, 16)), (zoo.tiny_transformer, torch.randn(2, 8, 16))):
        model, expected, got = _both(factory, (x,))
        assert [r.name for r in got] == [r.name for r in expected]
        assert [r.fp for r in got] == [r.fp for r in expected]
        assert all(p.dtype == torch.float32 for p in model.parameters())


def test_only_blocks_that_fit_are_widened_whole():
    model = torch.nn.Sequential(*(torch.nn.Linear(64, 64) for _ in range(4)))
    steps = widen.plan(model, limit=64 * 65 * 4)
    assert [whole for m, whole in steps if m is model] == [False]
    assert sum(1 for _, whole in steps if whole) == 4


def test_weights_are_float32_again_after_a_failing_forward():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(5, 4))  # the second cannot take 4 features
    before = list(model.parameters())
    seen = []
    model[0].register_forward_hook(lambda m, args, out: seen.append((m.weight.dtype, args[0].dtype, out.dtype)))
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"), widen.float64_weights(model):
        model(torch.randn(1, 4, dtype=torch.float64))
    assert seen == [(torch.float64, torch.float64, torch.float64)]  # widened while it ran
    after = list(model.parameters())
    assert all(a is b for a, b in zip(after, before, strict=True))  # the very float32 parameters are back
    assert all(p.dtype == torch.float32 for p in after)


def test_blocks_of_one_shape_reuse_the_float64_memory():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Linear(512, 512) for _ in range(3))).eval()
    x = torch.randn(2, 512, dtype=torch.float64)
    seen = []
    hooks = [m.register_forward_pre_hook(lambda m, a: seen.append(m.weight.data_ptr())) for m in model]
    with torch.no_grad(), widen.float64_weights(model, limit=512 * 513 * 4):  # each Linear a block
        got = model(x)
    for h in hooks:
        h.remove()
    assert len(seen) == 3 and len(set(seen)) == 1  # one float64 weight's memory, widened into three times
    with torch.no_grad():
        expected = copy.deepcopy(model).double()(x)
    assert torch.equal(got, expected) and all(p.dtype == torch.float32 for p in model.parameters())


class _Table(torch.nn.Module):
    """Returns a view of its own weight: memory that must not be reused while the view lives."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(512, 512))

    def forward(self, n):
        return self.weight[:n]


class _Two(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = _Table(), _Table()

    def forward(self, n):
        return self.a(n), self.b(n)


def test_a_weight_whose_view_is_still_alive_is_not_reused():
    model = _Two()
    with torch.no_grad(), widen.float64_weights(model, limit=512 * 512 * 4):  # each table a block
        first, second = model(4)
    assert first.dtype == torch.float64 and first.data_ptr() != second.data_ptr()
    assert torch.equal(first, model.a.weight[:4].detach().double())
    assert torch.equal(second, model.b.weight[:4].detach().double())
