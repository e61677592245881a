"""External data end to end on a small model (forced past the threshold): the bundle holds the
graph and its weights file, the marked copy shares that file, the digest streams the weights
and changes with them, and the example models still pass against their committed baselines."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from gate import commands
from gate.config import load_config
from gate.export import graph, saved
from gate.fingerprint import relative_error
from gate.runners import ort_session
from tests.conftest import ROOT


def _model(weight: np.ndarray) -> onnx.ModelProto:
    w = numpy_helper.from_array(weight, "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


@pytest.fixture
def external(monkeypatch):
    monkeypatch.setattr(saved, "EXTERNAL_MIN_BYTES", 0)


def test_saved_graph_keeps_weights_in_a_data_file(external, tmp_path):
    path = saved.save_proto(_model(np.ones((64, 64), np.float32)), tmp_path / saved.MODEL)
    proto = saved.load_graph(path)
    assert saved.data_files(proto) == [saved.DATA]
    assert (tmp_path / saved.DATA).stat().st_size == 64 * 64 * 4
    assert path.stat().st_size < 1024


def test_digest_streams_the_weights_and_changes_with_one_of_them(external, tmp_path):
    w = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    a = saved.save_proto(_model(w), (tmp_path / "a").mkdir() or tmp_path / "a" / saved.MODEL)
    b = saved.save_proto(_model(w), (tmp_path / "b").mkdir() or tmp_path / "b" / saved.MODEL)
    assert graph.file_digest(a) == graph.file_digest(b)
    w[10, 3] = np.nextafter(w[10, 3], np.float32(np.inf))
    c = saved.save_proto(_model(w), (tmp_path / "c").mkdir() or tmp_path / "c" / saved.MODEL)
    assert graph.file_digest(c) != graph.file_digest(a)


def test_inline_graph_digest_is_unchanged(tmp_path):
    proto = _model(np.ones((64, 64), np.float32))
    path = saved.save_proto(proto, tmp_path / saved.MODEL)
    assert graph.file_digest(path) == graph.graph_digest(proto)


def test_marked_copy_shares_the_weights_file_and_is_removed(external, tmp_path):
    path = saved.save_proto(_model(np.eye(64, dtype=np.float32)), tmp_path / saved.MODEL)
    proto = saved.load_graph(path)
    spec = ort_session.SessionSpec("CPUExecutionProvider")
    x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    result = ort_session.run(proto, spec, [x], ["h"], "m", timing_runs=0, model=path)
    assert result.values["h"].max == pytest.approx(float(x.max()), rel=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == [saved.MODEL, saved.DATA]


def test_examples_pass_with_their_weights_in_external_data(external, tmp_path):
    cfg = load_config(ROOT / "pyproject.toml")
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    assert report["verdict"] == "pass", json.dumps(report["first_regression"])
    ort = next(p for p in report["models"][1]["providers"] if p["name"] == "CPUExecutionProvider")
    assert sum(1 for r in ort["layers"] if r["status"] == "pass") >= 20


def test_inline_weights_are_set_apart_for_the_marked_copies_and_the_values_agree(tmp_path, monkeypatch):
    """A graph whose weights are inline (under the external-data threshold) is copied with its weights
    in a data file before values are marked: the copies share it (none carries the weights), the
    shipped file is run as it is, and every value agrees with a run of the inline graph."""
    monkeypatch.setattr(saved, "INLINE_APART_BYTES", 0)
    weight = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    (tmp_path / "shipped").mkdir()
    shipped = saved.save_proto(_model(weight), tmp_path / "shipped" / saved.MODEL)
    assert not saved.data_files(saved.load_graph(shipped))  # inline: what ships is one file
    apart = saved.weights_apart(shipped, tmp_path)
    assert apart != shipped and saved.data_files(saved.load_graph(apart)) == [saved.DATA]
    assert saved.load_graph(apart).ByteSize() < 4096  # the graph held in memory has no weights
    spec = ort_session.SessionSpec("CPUExecutionProvider", {}, {}, None)
    x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    inline = ort_session.run(saved.load_graph(shipped), spec, [x], ["h"], "m", timing_runs=0, model=shipped)
    split = ort_session.run(saved.load_graph(apart), spec, [x], ["h"], "m", timing_runs=0, model=shipped,
                            weights=apart)
    assert relative_error(split.values["h"], inline.values["h"]) <= 1e-6
    assert all(relative_error(a, b) <= 1e-6 for a, b in zip(split.outputs, inline.outputs, strict=True))
    assert saved.weights_apart(apart, tmp_path / "again") == apart  # weights already apart: used as they are


def test_a_strided_initializer_is_written_in_c_order_with_the_same_bytes(external, tmp_path):
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
