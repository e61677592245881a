"""How declared inputs meet the model (``gate.model.build``): they reach ``forward`` by position, so an
input named after a parameter its position does not bind is refused by its key, not fed to another."""

from __future__ import annotations

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
