"""Faults only the exported graph or the runtime sees: the PyTorch model is the baseline's, so the
float64 reference and torch-cpu do not move; only what ships does.

- ``graph_fp16``: a float16 round trip (Cast -> Cast) inserted after one module's output in the
  ONNX graph, as a careless mixed-precision pass would leave it (a ``transform``);
- ``graph_drop_node``: the node computing one module's output replaced by an Identity of its
  first input, as a graph "cleanup" that removes an op it wrongly thought redundant (a ``transform``);
- ``ep_bf16_hint``: OpenVINO's CPU inference precision hint set to bfloat16 through the EP's
  ``load_config`` option (an EP option; runs in the separate onnxruntime-openvino environment).

A transform targets a leaf module by the exporter's ``pkg.torch.onnx.name_scopes`` metadata: the
nodes whose innermost module is that module, and of its first call the last node (its output).
"""

from __future__ import annotations

import json

import onnx
from onnx import TensorProto, helper

from faultbench.faults import HINT_P, HINT_R, Fault

OV_BF16 = {"load_config": json.dumps({"CPU": {"INFERENCE_PRECISION_HINT": "bf16"}})}


def _scopes(node: onnx.NodeProto) -> list[str]:
    for prop in node.metadata_props:
        if prop.key == "pkg.torch.onnx.name_scopes":
            try:
                return list(json.loads(prop.value.replace("'", '"')))
            except ValueError:
                return []
    return []


def output_node(proto: onnx.ModelProto, module: str) -> int:
    """The index of the node producing ``module``'s (first call's) output."""
    mine = [(i, s[-1]) for i, n in enumerate(proto.graph.node) if len(s := _scopes(n)) >= 2 and s[-2] == module]
    if not mine:
        raise ValueError(f"no ONNX node belongs to module `{module}`")
    first_op = mine[0][1]
    return [i for i, op in mine if op == first_op][-1]


def fp16_after(proto: onnx.ModelProto, module: str) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    index = output_node(out, module)
    node = out.graph.node[index]
    value = node.output[0]
    node.output[0] = value + "__before_fp16"
    half = helper.make_node("Cast", [node.output[0]], [value + "__fp16"], to=TensorProto.FLOAT16,
                            name=value + "__to_fp16")
    back = helper.make_node("Cast", [half.output[0]], [value], to=TensorProto.FLOAT, name=value + "__to_fp32")
    for extra in (half, back):  # the same module: the value keeps its place in the layer map
        extra.metadata_props.extend(node.metadata_props)
    for offset, extra in enumerate((half, back), start=1):
        out.graph.node.insert(index + offset, extra)
    return out


def drop_node(proto: onnx.ModelProto, module: str) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    node = out.graph.node[output_node(out, module)]
    node.op_type, node.domain = "Identity", ""
    del node.input[1:]
    del node.attribute[:]
    return out


APPLY = {"graph_fp16": fp16_after, "graph_drop_node": drop_node}

# model -> kind -> the leaf module it targets
TARGETS = {
    "resnet18": {"graph_fp16": "layer2.1.bn1", "graph_drop_node": "layer3.1.relu", "ep_bf16_hint": "conv1"},
    "mobilenet_v3_small": {"graph_fp16": "features.4.block.1.1", "graph_drop_node": "features.5.block.0.2"},
    "efficientnet_b0": {"graph_fp16": "features.3.0.block.1.1", "graph_drop_node": "features.2.1.block.1.2"},
    "vit": {"graph_fp16": "encoder.layers.encoder_layer_0.mlp.0",
            "graph_drop_node": "encoder.layers.encoder_layer_1.mlp.1", "ep_bf16_hint": "conv_proj"},
    "bert": {"graph_fp16": "encoder.layer.1.attention.output.dense",
             "graph_drop_node": "encoder.layer.0.intermediate.intermediate_act_fn"},
    "gpt2": {"graph_fp16": "h.1.mlp.c_proj", "graph_drop_node": "h.0.mlp.act"},
    "llama": {"graph_fp16": "layers.0.mlp.down_proj", "graph_drop_node": "layers.1.mlp.act_fn"},
}
HINTS = {"graph_fp16": HINT_P, "graph_drop_node": HINT_R, "ep_bf16_hint": HINT_R}


def graph_faults(model: str) -> dict[str, Fault]:
    out = {}
    for kind, layer in TARGETS.get(model, {}).items():
        if kind == "ep_bf16_hint":
            out[kind] = Fault(layer, HINTS[kind], None, side="runtime", session=OV_BF16)
        else:
            out[kind] = Fault(layer, HINTS[kind], APPLY[kind], side="graph")
    return out
