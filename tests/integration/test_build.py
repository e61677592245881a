"""How declared inputs meet the model (``gate.model.build``): they reach ``forward`` by position, so an
input named after a parameter its position does not bind is refused by its key, not fed to another; and a
model whose tensors cannot be read fails its build, by the tensor's name."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from gate.config.types import InputSpec, ModelSpec
from gate.core.failure import ModelError
from gate.core.status import ErrorStatus
from gate.model.build import build

ROOT = Path(__file__).resolve().parents[2]
IDS = InputSpec("input_ids", (2, 8), "int64", high=50)
MASK = InputSpec("attention_mask", (2, 8), "int64", low=0, high=2)


class Text(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 4)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        return self.emb(input_ids) * attention_mask.unsqueeze(-1)


class Free(torch.nn.Module):
    def forward(self, *inputs):
        return inputs[0] * inputs[1]


def text() -> Text:
    return Text()


def free() -> Free:
    return Free()


def _build(factory: str, *inputs: InputSpec):
    spec = ModelSpec(name="m", factory=f"tests.integration.test_build:{factory}", inputs=inputs,
                     where="models[1]")
    return build(spec, ROOT)


@pytest.mark.parametrize(("inputs", "key", "bound"), [
    ((MASK, IDS), "`models[1].inputs[1].name`: `attention_mask`", "forward's `input_ids`"),  # swapped
    ((IDS, InputSpec("token_type_ids", (2, 8), "int64", high=2)),  # a parameter skipped over
     "`models[1].inputs[2].name`: `token_type_ids`", "forward's `attention_mask`"),
])
def test_an_input_named_after_a_parameter_its_position_does_not_bind_is_refused(inputs, key, bound):
    with pytest.raises(ModelError) as caught:
        _build("text", *inputs)
    assert caught.value.error_status == ErrorStatus.BUILD_FAIL
    assert f"model `m`: {key} is passed by position, as {bound} (forward takes input_ids, attention_mask, " \
           "token_type_ids): declare the inputs in that order" in str(caught.value)


def test_inputs_named_in_forwards_order_or_after_no_parameter_are_passed_by_position_as_before():
    built = _build("text", IDS, MASK)
    assert built.input_names == ["input_ids", "attention_mask"]
    # the digest its baseline recorded before names were compared with forward's: unchanged
    assert built.inputs_digest == "da18ff0ea22c50c453b79c69b685cdbfd3bc9b81d5054d86d0e9365ac77cb68a"
    assert _build("free", MASK, IDS).input_names == ["attention_mask", "input_ids"]  # *inputs: labels


class Unused(torch.nn.Module):
    """A lazy module its forward never calls (its parameters stay uninitialized) beside one it does."""

    def __init__(self):
        super().__init__()
        self.used, self.unused = torch.nn.LazyLinear(4), torch.nn.LazyLinear(4)

    def forward(self, x):
        return self.used(x)


def meta() -> torch.nn.Module:
    return torch.nn.Linear(8, 8).to("meta")


def lazy_unused() -> torch.nn.Module:
    return Unused()


def fake() -> torch.nn.Module:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        return torch.nn.Linear(8, 8)


class Plain(torch.Tensor):
    """A subclass with no operations of its own: its values are the tensor's."""


def readable() -> torch.nn.Module:
    """The twin: a lazy module its forward calls, and a buffer of a subclass that reads as a tensor."""
    module = torch.nn.Sequential(torch.nn.LazyLinear(4))
    module.register_buffer("scale", torch.ones(4).as_subclass(Plain))
    return module


X = InputSpec("x", (2, 8), "float32")


@pytest.mark.parametrize(("factory", "said"), [
    ("meta", "tensor `weight` has no data (meta device): load or initialise its weights in the factory"),
    ("lazy_unused", "tensor `unused.weight` is uninitialized (a lazy module its forward never calls)"),
    ("fake", "tensor `weight` is a FakeTensor, a subclass whose values cannot be read"),
])
def test_a_model_whose_tensors_cannot_be_read_fails_its_build_by_the_tensors_name(factory, said):
    with pytest.raises(ModelError) as caught:
        _build(factory, X)
    assert caught.value.error_status == ErrorStatus.BUILD_FAIL
    assert f"model `m`: {said}" in str(caught.value)


def test_a_model_whose_tensors_read_as_plain_ones_builds_and_is_hashed():
    built = _build("readable", X)
    assert set(built.digest.result().tensors) == {"scale", "0.weight", "0.bias"}


def test_two_runs_with_nan_or_inf_where_they_were_are_the_same_run():
    """A model with a NaN weight gives NaN where it did before: the repeat check's runs agree. Twin: a NaN
    or an infinity in another place, or a finite value moved past float32 rounding, differs."""
    from gate.model.build import REPEAT, _moved

    a = torch.tensor([1.0, float("nan"), float("inf"), -2.0], dtype=torch.float64)
    assert _moved(a, a.clone()) == 0.0
    assert _moved(a, torch.tensor([float("nan"), 1.0, float("inf"), -2.0], dtype=torch.float64)) == math.inf
    assert _moved(a, torch.tensor([1.0, float("nan"), 3.0, -2.0], dtype=torch.float64)) == math.inf
    moved = torch.tensor([1.0, float("nan"), float("inf"), -2.0 * (1 + 1e-3)], dtype=torch.float64)
    assert _moved(a, moved) > REPEAT
