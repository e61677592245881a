"""A small MLP and post-export transforms that lower one layer below float32 where nobody configured
it, as a quantization or mixed-precision config that caught a layer it should have left alone does
(tests/e2e/test_precision_change.py): an int8 weight behind a DequantizeLinear, a dynamic int8
MatMulInteger, a float16 block, and a bfloat16 round trip."""

from __future__ import annotations

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act1 = nn.Linear(16, 32), nn.GELU()
        self.fc2, self.act2 = nn.Linear(32, 32), nn.GELU()
        self.fc3 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc3(self.act2(self.fc2(self.act1(self.fc1(x)))))


def mlp() -> nn.Module:
    return Mlp()


class Rounded(Mlp):
    """`fc2`'s output rounded through float16 and back in the model's own code."""

    def forward(self, x):
        return self.fc3(self.act2(self.fc2(self.act1(self.fc1(x))).half().float()))


def mlp_rounded() -> nn.Module:
    return Rounded()


class RoundedWithTo(Mlp):
    """`Rounded` written with ``.to``: the same casts in the same module call."""

    def forward(self, x):
        return self.fc3(self.act2(self.fc2(self.act1(self.fc1(x))).to(torch.float16).to(torch.float32)))


def mlp_rounded_with_to() -> nn.Module:
    return RoundedWithTo()


class _Round(nn.Module):
    """A block whose own code rounds its Linear's output through float16."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)

    def forward(self, x):
        return self.fc(x).half().float()


class BlockRounded(nn.Module):
    def __init__(self, name: str = "block"):
        super().__init__()
        self.name = name
        self.fc1, self.act = nn.Linear(16, 32), nn.GELU()
        setattr(self, name, _Round())
        self.fc3 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc3(getattr(self, self.name)(self.act(self.fc1(x))))


def block_rounded() -> nn.Module:
    torch.manual_seed(0)
    return BlockRounded()


def block_rounded_renamed() -> nn.Module:
    """`block_rounded` with its block renamed: the same casts in the same call, under another name."""
    torch.manual_seed(0)
    return BlockRounded("stage")


class ExportScaled(Mlp):
    """`fc2`'s output 1e-4 larger in the exported graph only: a fault only the ONNX runtimes see."""

    def forward(self, x):
        h = self.fc2(self.act1(self.fc1(x)))
        return self.fc3(self.act2(h * (1 + 1e-4) if torch.onnx.is_in_onnx_export() else h))


def mlp_export_scaled() -> nn.Module:
    return ExportScaled()


class Widened(Mlp):
    """The model in float64, its float32 input cast to its weights' dtype: it ships float64 outputs (ReLU:
    ONNX Runtime's CPU EP has no float64 Erf)."""

    def __init__(self):
        super().__init__()
        self.act1, self.act2 = nn.ReLU(), nn.ReLU()

    def forward(self, x):
        return super().forward(x.to(self.fc1.weight.dtype))


def mlp_float64() -> nn.Module:
    return Widened().double()


def mlp_float64_dropped() -> nn.Module:
    return Widened()


def _gemm(proto: onnx.ModelProto, module: str) -> tuple[int, onnx.NodeProto, dict[str, onnx.TensorProto]]:
    """The Gemm that reads ``module``'s weight (the exporter's x @ W.T + b), and the initializers by name."""
    inits = {t.name: t for t in proto.graph.initializer}
    index, node = next((i, n) for i, n in enumerate(proto.graph.node) if f"{module}.weight" in n.input)
    assert node.op_type == "Gemm", node.op_type
    return index, node, inits


def _replace(proto: onnx.ModelProto, index: int, nodes: list[onnx.NodeProto], drop: list[str],
             add: list[onnx.TensorProto]) -> onnx.ModelProto:
    graph = proto.graph
    kept = [t for t in graph.initializer if t.name not in drop]
    del graph.initializer[:]
    graph.initializer.extend(kept + add)
    new = list(graph.node[:index]) + nodes + list(graph.node[index + 1:])
    del graph.node[:]
    graph.node.extend(new)
    return proto


def _int8(w: np.ndarray) -> tuple[np.ndarray, np.float32]:
    scale = np.float32(np.abs(w).max() / 127)
    return np.clip(np.round(w / scale), -127, 127).astype(np.int8), scale


def int8_weight(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`fc2`'s weight stored as int8, dequantized in the graph (weight-only quantization)."""
    index, node, inits = _gemm(proto, "fc2")
    q, scale = _int8(numpy_helper.to_array(inits["fc2.weight"]))
    dq = helper.make_node("DequantizeLinear",
                          ["fc2.weight_quantized", "fc2.weight_scale", "fc2.weight_zero_point"],
                          ["fc2.weight_dequantized"], name="fc2_dequantize")
    gemm = helper.make_node("Gemm", [node.input[0], "fc2.weight_dequantized", node.input[2]],
                            list(node.output), name=node.name, transB=1)
    return _replace(proto, index, [dq, gemm], ["fc2.weight"], [
        numpy_helper.from_array(q, "fc2.weight_quantized"),
        numpy_helper.from_array(np.array(scale, np.float32), "fc2.weight_scale"),
        numpy_helper.from_array(np.array(0, np.int8), "fc2.weight_zero_point")])


def dynamic_int8(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`fc2` as dynamic quantization writes it: activations quantized at run time, MatMulInteger."""
    index, node, inits = _gemm(proto, "fc2")
    q, scale = _int8(numpy_helper.to_array(inits["fc2.weight"]).T.copy())
    x, out = node.input[0], node.output[0]
    nodes = [
        helper.make_node("DynamicQuantizeLinear", [x], ["fc2_x_q", "fc2_x_scale", "fc2_x_zp"],
                         name="fc2_quantize"),
        helper.make_node("MatMulInteger",
                         ["fc2_x_q", "fc2.weight_quantized", "fc2_x_zp", "fc2.weight_zero_point"],
                         ["fc2_int32"], name="fc2_matmul_integer"),
        helper.make_node("Cast", ["fc2_int32"], ["fc2_float"], to=TensorProto.FLOAT, name="fc2_cast"),
        helper.make_node("Mul", ["fc2_x_scale", "fc2.weight_scale"], ["fc2_scale"], name="fc2_scale"),
        helper.make_node("Mul", ["fc2_float", "fc2_scale"], ["fc2_scaled"], name="fc2_rescale"),
        helper.make_node("Add", ["fc2_scaled", node.input[2]], [out], name="fc2_bias"),
    ]
    return _replace(proto, index, nodes, ["fc2.weight"], [
        numpy_helper.from_array(q, "fc2.weight_quantized"),
        numpy_helper.from_array(np.array(scale, np.float32), "fc2.weight_scale"),
        numpy_helper.from_array(np.array(0, np.int8), "fc2.weight_zero_point")])


def float16_block(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`fc2` computed in float16 between two casts, its weight and bias stored as float16."""
    index, node, inits = _gemm(proto, "fc2")
    half = [numpy_helper.from_array(numpy_helper.to_array(inits[f"fc2.{k}"]).astype(np.float16),
                                    f"fc2.{k}_fp16") for k in ("weight", "bias")]
    nodes = [helper.make_node("Cast", [node.input[0]], ["fc2_in_fp16"], to=TensorProto.FLOAT16,
                              name="fc2_to_fp16"),
             helper.make_node("Gemm", ["fc2_in_fp16", "fc2.weight_fp16", "fc2.bias_fp16"], ["fc2_out_fp16"],
                              name=node.name, transB=1),
             helper.make_node("Cast", ["fc2_out_fp16"], list(node.output), to=TensorProto.FLOAT,
                              name="fc2_to_fp32")]
    return _replace(proto, index, nodes, ["fc2.weight", "fc2.bias"], half)


def bfloat16_cast(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`fc2`'s output rounded through bfloat16 and back."""
    index, node, _ = _gemm(proto, "fc2")
    out = node.output[0]
    renamed = onnx.NodeProto()
    renamed.CopyFrom(node)
    renamed.output[0] = "fc2_raw"
    nodes = [renamed,
             helper.make_node("Cast", ["fc2_raw"], ["fc2_bf16"], to=TensorProto.BFLOAT16, name="fc2_to_bf16"),
             helper.make_node("Cast", ["fc2_bf16"], [out], to=TensorProto.FLOAT, name="fc2_from_bf16")]
    return _replace(proto, index, nodes, [], [])
