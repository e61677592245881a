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


class _Tokens(torch.nn.Module):
    """Two embedding tables (one renorming the rows it reads in place) and a head."""

    def __init__(self):
        super().__init__()
        self.words = torch.nn.Embedding(5000, 64, padding_idx=0)
        self.places = torch.nn.Embedding(300, 64, max_norm=1.0)
        self.head = torch.nn.Linear(64, 8)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.head(self.words(ids) + self.places(positions))


def _fingerprints_both_ways(model, inputs, limit):
    copied, wide_inputs = reference.as_float64(model, inputs)
    expected, _, _ = reference._capture(copied, wide_inputs, True)
    with widen.float64_weights(model, limit=limit):
        got, _, _ = reference._capture(model, inputs, True)
    return expected, got


def test_an_embedding_widens_only_the_rows_its_input_names(monkeypatch):
    torch.manual_seed(0)
    model = _Tokens().eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ids = torch.tensor([[0, 7, 7, 4999, 12]])
    assert [widen.gathers(m) for m in (model.words, model.places, model.head)] == [True, True, False]
    seen = []
    by_rows = widen._widen_rows

    def spy(module, index):
        widened = by_rows(module, index)
        seen.append((module, module.weight))
        return widened

    monkeypatch.setattr(widen, "_widen_rows", spy)
    expected, got = _fingerprints_both_ways(model, (ids,), limit=64 * 64 * 4)
    assert [r.name for r in got] == [r.name for r in expected]
    assert [r.fp for r in got] == [r.fp for r in expected]  # bit for bit what a float64 copy gives
    assert [m for m, _ in seen] == [model.words, model.places]
    table = seen[0][1]
    rows = ids.unique()
    assert table.dtype == torch.float64
    assert torch.equal(table[rows], before["words.weight"][rows].double())
    # The float32 model is untouched: the renorm of ``places`` happened to the float64 rows only.
    after = model.state_dict()
    assert all(torch.equal(v, before[k]) and v.dtype == before[k].dtype for k, v in after.items())


def test_an_embedding_that_reads_more_than_its_rows_is_widened_whole():
    class Scaled(torch.nn.Embedding):
        def forward(self, ids):
            return super().forward(ids) / self.weight.norm()  # reads every row

    hooked = torch.nn.Embedding(10, 4)
    hooked.register_forward_pre_hook(lambda m, args: None)
    anywhere = torch.nn.modules.module.register_module_forward_hook(lambda m, args, out: None)
    try:
        assert not widen.gathers(torch.nn.Embedding(10, 4))  # a hook on every module could read the table
    finally:
        anywhere.remove()
    parametrized = torch.nn.Embedding(10, 4)
    torch.nn.utils.parametrize.register_parametrization(parametrized, "weight", torch.nn.Identity())
    assert not any(widen.gathers(m) for m in (Scaled(10, 4), hooked, parametrized))
    torch.manual_seed(0)
    model = torch.nn.Sequential(Scaled(300, 16), torch.nn.Linear(16, 4)).eval()
    expected, got = _fingerprints_both_ways(model, (torch.tensor([[1, 2, 3]]),), limit=16 * 16 * 4)
    assert [r.fp for r in got] == [r.fp for r in expected]


def test_an_index_out_of_range_fails_as_in_the_forward_and_leaves_float32():
    model = torch.nn.Sequential(torch.nn.Embedding(100, 8), torch.nn.Linear(8, 2)).eval()
    with pytest.raises(IndexError), torch.no_grad(), widen.float64_weights(model, limit=8 * 8 * 4):
        model(torch.tensor([[3, 100]]))
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_a_decoder_with_its_embeddings_widened_by_rows_matches_a_float64_copy():
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=5000, n_positions=64, use_cache=False,
                        attn_implementation="eager")
    model = GPT2Model(config).eval()
    ids = torch.randint(0, 5000, (1, 16))
    largest_block = max(widen._size(b) for b in model.h)
    assert any(widen.gathers(m) for m, _ in widen.plan(model, largest_block))  # tables: steps of their own
    expected, got = _fingerprints_both_ways(model, (ids,), limit=largest_block)
    assert [r.name for r in got] == [r.name for r in expected]
    assert [r.fp for r in got] == [r.fp for r in expected]
