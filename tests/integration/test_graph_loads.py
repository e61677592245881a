"""``saved.refusal``: the rule that a graph loads, on real files and real ONNX Runtime sessions. Each
thing it lets pass has its twin that it refuses: a node the CPU EP has no kernel for loads, a node
ONNX Runtime defines but the graph gets wrong does not; a custom op library's domain is left to its
provider, ONNX Runtime's own domain is not; a graph with external data is checked by its path."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gate.export import saved

SQUEEZE = "ONNX checker: [ShapeInferenceError] Inference error(s): (op_type:Squeeze"


def _save(tmp_path, nodes, dtype=TensorProto.FLOAT, shape=(2, 16, 8), out=(2, 16, 8), inits=(), domains=(),
          full_check=True):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", dtype, list(shape))],
                          [helper.make_tensor_value_info("y", dtype, list(out))], list(inits))
    opsets = [helper.make_opsetid("", 18)] + [helper.make_opsetid(d, 1) for d in domains]
    path = saved.save_proto(helper.make_model(g, opset_imports=opsets), tmp_path / saved.MODEL)
    return saved.refusal(path, saved.load_graph(path), full_check)


def _squeeze():
    """``Squeeze`` of axis 1 after a ``MatMul``: as the dynamo exporter writes for ``x.squeeze(1)``."""
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Squeeze", ["h", "axes"], ["y"])]
    return nodes, axes


@pytest.mark.parametrize("full_check", [True, False])
def test_a_squeeze_of_a_dimension_that_is_not_1_is_refused(tmp_path, full_check):
    nodes, axes = _squeeze()
    w = numpy_helper.from_array(np.ones((8, 64), np.float32), "w")  # past INLINE_TENSOR_BYTES: external
    why = _save(tmp_path, nodes, out=(2, 16, 64), inits=[w, axes], full_check=full_check)
    assert why is not None and "Dimension of input 1 must be 1 instead of 16" in why
    assert why.startswith(SQUEEZE if full_check else "ONNX Runtime: ")  # without the checker, ONNX Runtime
    assert (tmp_path / saved.DATA).exists()  # checked by its path, the weights beside it


@pytest.mark.parametrize("full_check", [True, False])
def test_nodes_out_of_order_are_refused_by_the_checker_alone(tmp_path, full_check):
    # as onnxruntime's float16 converter writes them: ONNX Runtime sorts them, the ONNX checker refuses
    nodes = [helper.make_node("Relu", ["h"], ["y"]), helper.make_node("Neg", ["x"], ["h"])]
    why = _save(tmp_path, nodes, shape=(2, 4), out=(2, 4), full_check=full_check)
    assert (why is None) != full_check and (why is None or "topologically sorted" in why), why


def test_a_squeeze_of_a_dimension_of_1_loads(tmp_path):
    nodes, axes = _squeeze()
    w = numpy_helper.from_array(np.ones((8, 8), np.float32), "w")
    assert _save(tmp_path, nodes, shape=(2, 1, 8), out=(2, 8), inits=[w, axes]) is None


def test_a_node_the_cpu_ep_has_no_kernel_for_is_no_refusal(tmp_path):
    w = helper.make_tensor("w", TensorProto.BFLOAT16, [4, 4], np.zeros(16, np.uint16).tobytes(), raw=True)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    assert _save(tmp_path, nodes, TensorProto.BFLOAT16, (2, 4), (2, 4), [w]) is None


def test_a_node_onnx_runtime_defines_but_the_graph_gets_wrong_is_refused(tmp_path):
    # The ONNX checker knows no com.microsoft schema and passes it; ONNX Runtime does and refuses it.
    nodes = [helper.make_node("DecoderMaskedMultiHeadAttention", ["x"], ["y"], domain="com.microsoft")]
    why = _save(tmp_path, nodes, shape=(2, 4), out=(2, 4), domains=["com.microsoft"])
    assert why is not None and why.startswith("ONNX Runtime: ") and "INVALID_GRAPH" in why
    assert str(tmp_path) not in why  # the file's name, not the temporary folder's


def test_a_custom_op_library_s_domain_is_left_to_its_provider(tmp_path):
    nodes = [helper.make_node("Plugin", ["x"], ["y"], domain="trt.plugins")]
    assert _save(tmp_path, nodes, shape=(2, 4), out=(2, 4), domains=["trt.plugins"]) is None


def test_an_invalid_graph_is_refused_by_the_checker(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["x"], ["y"])]  # y twice
    why = _save(tmp_path, nodes, shape=(2, 4), out=(2, 4))
    assert why is not None and why.startswith("ONNX checker: ")
    assert onnx.load(str(tmp_path / saved.MODEL)).graph.node  # the file itself is left as it was
