"""Post-export transforms as teams apply them before they ship an ONNX model (``transform =
"examples.transforms:float16"`` in a model's config): each takes the exported ``onnx.ModelProto``
and returns the one that ships."""

from __future__ import annotations

import tempfile
from pathlib import Path

import onnx


def float16(model: onnx.ModelProto) -> onnx.ModelProto:
    """Weights and activations in float16, inputs and outputs kept float32."""
    from onnxruntime.transformers.float16 import convert_float_to_float16

    return convert_float_to_float16(model, keep_io_types=True)


def int8_dynamic(model: onnx.ModelProto) -> onnx.ModelProto:
    """Dynamic int8 quantization of the weights of MatMul/Gemm/Conv (activations quantized at run time)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "model.onnx", Path(tmp) / "model.int8.onnx"
        onnx.save(model, src)
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
        return onnx.load(dst)


def bert_optimized(model: onnx.ModelProto) -> onnx.ModelProto:
    """The ONNX Runtime transformer optimizer for BERT (attention, LayerNorm, GELU fusions); the
    head count and hidden size are read from the graph."""
    from onnxruntime.transformers.optimizer import optimize_model

    # opt_level 0: the optimizer's own fusions, without first round-tripping the graph through an
    # ONNX Runtime session (which writes the weights as external data the fusions then cannot read).
    return optimize_model(model, model_type="bert", num_heads=0, hidden_size=0, opt_level=0).model
