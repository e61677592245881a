"""The stage table (gate.pipeline.content_key.STAGE_PARTS): each stage's key digests exactly the parts
it reads and the versions of what it runs. Changing one input changes the keys of the stages that
read it, and no other."""

from __future__ import annotations

import pytest

from gate.config.types import ModelSpec
from gate.core.status import KeyPart, Stage
from gate.pipeline.content_key import STAGE_PARTS, ContentKey, stage_keys, transform_key

PARTS = {p.value: f"{i:016x}" for i, p in enumerate(KeyPart)}
TOOLS = {"python": "3.11.7", "torch": "2.14.1", "numpy": "2.3.0", "onnx": "1.23.2", "onnxscript": "0.7.2",
         "onnx-ir": "1.1.0", "onnxruntime": "1.32.0"}
MODEL_PACKAGES = {"transformers": "5.24.0"}
TRANSFORM_PACKAGES = {"onnxconverter-common": "1.16"}
SPEC = ModelSpec("m", "mod:f", "mod:inputs", transform="mod:t", transform_inputs=("deploy/*.yaml",))


def keys(spec: ModelSpec = SPEC, parts=PARTS, tools=TOOLS, model=MODEL_PACKAGES, transform=TRANSFORM_PACKAGES):
    return stage_keys(spec, parts, tools, model, transform)


@pytest.mark.parametrize("part", [p for p in KeyPart if p != KeyPart.VERSIONS])  # versions: per package, below
def test_a_part_moves_the_keys_of_exactly_the_stages_that_read_it(part):
    before, after = keys(), keys(parts={**PARTS, part.value: "f" * 16})
    moved = {s for s in before if before[s] != after[s]}
    assert moved == {s.value for s, read in STAGE_PARTS.items() if part in read}


@pytest.mark.parametrize(("package", "stages"), [
    ("torch", {"structure", "export", "reference"}), ("numpy", {"structure", "export", "transform", "reference"}),
    ("python", {"structure", "export", "transform", "reference"}), ("onnx", {"structure", "export", "transform"}),
    ("onnxscript", {"structure", "export"}), ("onnx-ir", {"structure", "export"}), ("onnxruntime", {"transform"}),
])
def test_a_tool_version_moves_the_keys_of_the_stages_that_run_it(package, stages):
    before, after = keys(), keys(tools={**TOOLS, package: "0.0.1"})
    assert {s for s in before if before[s] != after[s]} == stages


def test_the_model_s_packages_move_export_and_reference_and_the_transform_s_its_own():
    before = keys()
    model = keys(model={"transformers": "4.0"})
    assert {s for s in before if before[s] != model[s]} == {"structure", "export", "reference"}
    transform = keys(transform={"onnxconverter-common": "1.0"})
    assert {s for s in before if before[s] != transform[s]} == {"transform"}


def test_a_transform_without_declared_inputs_has_no_key_and_none_has_no_transform_stage():
    assert set(keys()) == {"structure", "export", "transform", "reference"}
    undeclared = ModelSpec("m", "mod:f", "mod:inputs", transform="mod:t")
    assert set(keys(undeclared)) == {"structure", "export", "reference"}
    assert set(keys(ModelSpec("m", "mod:f", "mod:inputs"))) == {"structure", "export", "reference"}


def test_only_the_dynamo_exporter_leaves_a_structure_to_bind_weights_into():
    from pathlib import Path

    assert "structure" not in keys(ModelSpec("m", "mod:f", "mod:inputs", exporter="torchscript"))
    assert "structure" not in keys(ModelSpec("m", "mod:f", "mod:inputs", artifact=Path("m.onnx")))


def test_the_transform_s_key_digests_the_graph_it_reads():
    content = ContentKey("k" * 64, PARTS, 1, stages=keys())
    a, b = transform_key(content, "a" * 64), transform_key(content, "b" * 64)
    assert a and b and a != b and len(a) == 64
    unkeyed = ContentKey("k" * 64, PARTS, 1, stages={k: v for k, v in keys().items() if k != "transform"})
    assert transform_key(unkeyed, "a" * 64) is None


def test_stage_keys_go_through_the_baseline_format():
    from gate.formats.baseline import decode_baseline, encode_baseline
    from tests.support.baseline_docs import make_document

    content = ContentKey("f" * 64, PARTS, 3, stages=keys())
    doc = make_document(3)
    doc["meta"]["content_key"] = content.to_dict()
    again = decode_baseline(encode_baseline(doc), "b.msgpack.zst")
    assert ContentKey.from_dict(again["meta"]["content_key"]).stage(Stage.TRANSFORM) == keys()["transform"]
