"""ONNX values mapped back to module calls, on real exports of the example models."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.config import InputSpec, ModelSpec
from gate.core.runs import OnnxSite
from gate.export.exporter import export
from gate.export.layermap import assign, eval_list
from gate.model.build import build
from gate.runners import torch_hooks

ROOT = Path(__file__).resolve().parents[2]


def mapped(factory: str, shape: tuple, exporter: str = "dynamo"):
    spec = ModelSpec(name="m", factory=factory, inputs=(InputSpec("x", shape),), exporter=exporter, where="models[0]")
    built = build(spec, ROOT)
    exported = export(built)
    records = torch_hooks.run(built.module, built.inputs)
    return exported, records, assign(records, exported.calls, exported.shapes, exported.available)


@pytest.fixture(scope="module")
def cnn():
    return mapped("examples.zoo:tiny_cnn", (2, 3, 16, 16))


def test_each_call_of_a_module_gets_its_own_value(cnn):
    _, _, a = cnn
    assert a["block1.relu"].kind == "value" and a["block1.relu#2"].kind == "value"
    assert a["block1.relu"].value != a["block1.relu#2"].value


def test_conv_folded_into_batchnorm_is_reported_folded_not_matched(cnn):
    exported, _, a = cnn
    assert a["block1.conv1"].kind == "folded"
    # The fused Conv node produces the BatchNorm's value, which stays matched to the BatchNorm.
    assert a["block1.bn1"].kind == "value" and a["block1.bn1"].value in exported.available


def test_containers_and_root_are_layers(cnn):
    _, records, a = cnn
    names = [r.name for r in records]
    assert names.index("block1.conv1") < names.index("block1") < names.index("(model)")
    assert a["block1"].kind == "value" and a["(model)"] == OnnxSite("output", output=0)


def test_identity_module_has_no_node(cnn):
    _, _, a = cnn
    assert a["drop"].kind == "absent"


def test_tuple_outputs_are_named_per_element():
    _, records, a = mapped("examples.zoo:tiny_transformer", (2, 8, 16))
    assert a["blocks.1.attn[0]"].kind == "value"
    # The attention weights are unused downstream: the export drops them, and the gate says so
    # rather than matching them to another value.
    assert a["blocks.1.attn[1]"].kind in ("folded", "absent")
    assert a["blocks.0.attn.merge"].kind == "value"


def test_torchscript_exporter_maps_by_node_names():
    exported, _, a = mapped("examples.zoo:tiny_cnn", (2, 3, 16, 16), exporter="torchscript")
    assert exported.exporter == "torchscript"
    assert a["block1.relu"].kind == "value" and a["block1.relu#2"].kind == "value"
    assert a["block1.relu"].value != a["block1.relu#2"].value
    assert a["fc"].kind == "value"


def test_scope_metadata_parser_needs_no_eval():
    assert eval_list("['', 'layer1', 'layer1.0']") == ["", "layer1", "layer1.0"]
    with pytest.raises(ValueError):
        eval_list("__import__('os')")
