"""External data end to end: every saved graph keeps its weights in a data file beside it, the marked
copy shares that file, the digest streams the weights, is the one its self-contained file had (the
digest baselines record) and changes with them, and the example models pass against their committed
baselines."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gate import commands
from gate.config import load_config
from gate.export import graph, saved
from gate.runners import ort_session
from tests.conftest import ROOT


def _model(weight: np.ndarray) -> onnx.ModelProto:
    w = numpy_helper.from_array(weight, "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def test_saved_graph_keeps_weights_in_a_data_file(tmp_path):
    path = saved.save_proto(_model(np.ones((64, 64), np.float32)), tmp_path / saved.MODEL)
    proto = saved.load_graph(path)
    assert saved.data_files(proto) == [saved.DATA]
    assert (tmp_path / saved.DATA).stat().st_size == 64 * 64 * 4
    assert path.stat().st_size < 1024


def test_digest_streams_the_weights_and_changes_with_one_of_them(tmp_path):
    w = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    a = saved.save_proto(_model(w), (tmp_path / "a").mkdir() or tmp_path / "a" / saved.MODEL)
    b = saved.save_proto(_model(w), (tmp_path / "b").mkdir() or tmp_path / "b" / saved.MODEL)
    assert graph.file_digest(a) == graph.file_digest(b)
    w[10, 3] = np.nextafter(w[10, 3], np.float32(np.inf))
    c = saved.save_proto(_model(w), (tmp_path / "c").mkdir() or tmp_path / "c" / saved.MODEL)
    assert graph.file_digest(c) != graph.file_digest(a)


def _copy(proto: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    return out


def _with_subgraph(weight: np.ndarray) -> onnx.ModelProto:
    """An ``If`` whose branch holds an initializer: weights apart at two depths, doc strings on the way."""
    y = helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 64])
    node = helper.make_node("MatMul", ["x", "sw"], ["t"], doc_string="d")
    then = helper.make_graph([node], "then", [], [y], [numpy_helper.from_array(weight[::-1].copy(), "sw")])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "else", [], [y])
    model = _model(weight)
    model.graph.initializer.append(numpy_helper.from_array(np.array(True), "c"))
    model.graph.node.append(helper.make_node("If", ["c"], ["z"], then_branch=then, else_branch=other))
    model.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 64]))
    model.doc_string = "model"
    return model


@pytest.mark.parametrize("build", [_model, _with_subgraph])
def test_a_graph_with_its_weights_apart_has_the_digest_of_its_self_contained_file(tmp_path, build):
    """Graphs of up to 64 MiB of weights were saved as one file, and baselines record that file's digest:
    streamed from the data file, it is the same, to the byte, wherever the weights sit."""
    weight = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)
    proto = build(weight)
    whole = graph.graph_digest(_copy(proto))
    path = saved.save_proto(proto, tmp_path / saved.MODEL)
    assert len(saved.external(saved.load_graph(path))) >= 1
    assert graph.file_digest(path) == whole
    weight[0, 0] += 1
    (tmp_path / "b").mkdir()
    assert graph.file_digest(saved.save_proto(build(weight), tmp_path / "b" / saved.MODEL)) != whole


def test_past_the_one_file_size_the_digest_is_the_bare_graph_then_the_weights(tmp_path, monkeypatch):
    monkeypatch.setattr(graph, "ONE_FILE_MAX", 0)  # as a graph past 64 MiB of weights
    weight = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    whole = graph.graph_digest(_copy(_model(weight)))
    a = saved.save_proto(_model(weight), (tmp_path / "a").mkdir() or tmp_path / "a" / saved.MODEL)
    assert graph.file_digest(a) != whole
    b = saved.save_proto(_model(weight), (tmp_path / "b").mkdir() or tmp_path / "b" / saved.MODEL)
    assert graph.file_digest(b) == graph.file_digest(a)


def test_a_graph_with_unknown_fields_is_digested_loaded_whole(tmp_path):
    """Serialization writes unknown fields last, where the streamed digest could not place them."""
    proto = _model(np.ones((64, 64), np.float32))
    unknown = b"\xf8\x07\x01"  # field 127, a varint: no field of ModelProto
    whole = graph.graph_digest(onnx.load_from_string(proto.SerializeToString() + unknown))
    path = saved.save_proto(proto, tmp_path / saved.MODEL)
    path.write_bytes(path.read_bytes() + unknown)
    assert graph.file_digest(path) == whole


def test_a_data_file_shorter_than_its_graph_says_is_an_error(tmp_path):
    path = saved.save_proto(_model(np.ones((64, 64), np.float32)), tmp_path / saved.MODEL)
    with open(tmp_path / saved.DATA, "r+b") as f:
        f.truncate(100)
    with pytest.raises(ValueError, match="short"):
        graph.file_digest(path)


def test_marked_copy_shares_the_weights_file_and_is_removed(tmp_path):
    path = saved.save_proto(_model(np.eye(64, dtype=np.float32)), tmp_path / saved.MODEL)
    proto = saved.load_graph(path)
    spec = ort_session.SessionSpec("CPUExecutionProvider")
    x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    result = ort_session.run(proto, spec, [x], ["h"], "m", timing_runs=0, model=path)
    assert result.values["h"].max == pytest.approx(float(x.max()), rel=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == [saved.MODEL, saved.DATA]


def test_examples_pass_with_their_weights_in_external_data(tmp_path):
    cfg = load_config(ROOT / "pyproject.toml")
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    assert report["verdict"] == "pass", json.dumps(report["first_regression"])
    ort = next(p for p in report["models"][1]["providers"] if p["name"] == "CPUExecutionProvider")
    assert sum(1 for r in ort["layers"] if r["status"] == "pass") >= 20


def test_a_strided_initializer_is_written_in_c_order_with_the_same_bytes(tmp_path):
    """The optimizer folds transposes into strided NumPy views; the writer writes each from a C-order copy
    made as it is written (NumPy writes a strided array element by element), none held after: the model
    keeps its view, and the file holds the same bytes."""
    import onnx_ir as ir

    from gate.export.exporter import _save_ir

    base = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    paths = {}
    for name, weight in (("strided", base.T), ("contiguous", np.ascontiguousarray(base.T))):
        model = ir.serde.deserialize_model(_model(np.zeros((64, 64), np.float32)))
        model.graph.initializers["w"].const_value = ir.Tensor(weight, name="w")
        assert weight.flags.c_contiguous == (name == "contiguous")
        folder = tmp_path / name
        folder.mkdir()
        _save_ir(model, folder / saved.MODEL)
        assert model.graph.initializers["w"].const_value.raw is weight
        paths[name] = folder / saved.MODEL
    strided, contiguous = (paths[k].parent / saved.DATA for k in ("strided", "contiguous"))
    assert strided.read_bytes() == contiguous.read_bytes()
    assert graph.file_digest(paths["strided"]) == graph.file_digest(paths["contiguous"])
    proto = saved.load_graph(paths["strided"])
    stored = numpy_helper.to_array(proto.graph.initializer[0], base_dir=str(tmp_path / "strided"))
    assert np.array_equal(stored, base.T)


@pytest.mark.parametrize("where", ["../model.onnx.data", "/etc/hostname", ""])
def test_a_data_file_named_outside_the_graphs_folder_is_refused(tmp_path, where):
    """A graph from a store or a bundle names its data file: never read or linked from outside its folder."""
    (tmp_path / "g").mkdir()
    path = saved.save_proto(_model(np.ones((64, 64), np.float32)), tmp_path / "g" / saved.MODEL)
    (tmp_path / saved.DATA).write_bytes((tmp_path / "g" / saved.DATA).read_bytes())
    proto = saved.load_graph(path)
    for t in saved.external(proto):
        for e in t.external_data:
            if e.key == "location":
                e.value = where
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(ValueError, match="not a file beside the graph"):
        graph.file_digest(path)
    with pytest.raises(ValueError, match="not a file beside the graph"):
        saved.copy_model(path, tmp_path / "copy")


def test_a_graph_whose_data_file_has_a_second_link_loads_whole_as_from_one_file(tmp_path):
    """The store hard-links what it holds, and onnx refuses such a data file: the gate reads it itself
    (a transform reads a stored export), and gets the graph a self-contained file holds."""
    proto = _with_subgraph(np.random.default_rng(4).standard_normal((64, 64)).astype(np.float32))
    whole = _copy(proto)
    path = saved.save_proto(proto, tmp_path / saved.MODEL)
    os.link(tmp_path / saved.DATA, tmp_path / "stored.data")
    with pytest.raises(Exception, match="hard link"):
        onnx.load(str(path))
    assert graph.graph_digest(saved.load_model(path)) == graph.graph_digest(whole)


def test_a_dynamo_export_saved_by_the_gates_writer_has_its_self_contained_files_digest(tmp_path):
    """What the exporter writes (``onnx_ir``, its weights apart) hashes as the one file it wrote before."""
    import onnx_ir as ir
    import torch

    from gate.export.exporter import _save_ir

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                                 torch.nn.Flatten(), torch.nn.Linear(16 * 6 * 6, 10)).eval()
    with torch.inference_mode():
        program = torch.onnx.export(module, (torch.randn(1, 3, 8, 8),), dynamo=True, verbose=False)
    ir.save(program.model, str(tmp_path / "whole.onnx"))
    (tmp_path / "apart").mkdir()
    _save_ir(program.model, tmp_path / "apart" / saved.MODEL)
    assert saved.data_files(saved.load_graph(tmp_path / "apart" / saved.MODEL)) == [saved.DATA]
    whole = graph.graph_digest(onnx.load(str(tmp_path / "whole.onnx")))
    assert graph.file_digest(tmp_path / "apart" / saved.MODEL) == whole
