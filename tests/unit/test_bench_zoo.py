"""scripts/bench_zoo.py's helpers: which layer counts as the faulted module's, which module a fault
goes into, the gate's message a row reports, a row's time limit ending its whole process tree, and
the table block rewritten in place. No model is exported here; the table itself is the benchmark."""

from __future__ import annotations

import re
import sys
import time

import numpy as np
import onnx
import pytest
import torch
from onnx import helper, numpy_helper
from torch import nn

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

import bench_zoo  # noqa: E402
from zoo import specs, table  # noqa: E402
from zoo.graph_fault import rounded  # noqa: E402
from zoo.pick import candidates  # noqa: E402
from zoo.reasons import gate_message, shorten  # noqa: E402
from zoo.row import belongs, named_at  # noqa: E402
from zoo.steps import run  # noqa: E402


def test_a_layer_belongs_to_its_module_its_later_calls_and_its_elements():
    assert belongs("layer3.0.conv1", "layer3.0.conv1")
    assert belongs("layer3.0.conv1#2", "layer3.0.conv1")
    assert belongs("model.attn[0][1]", "model.attn")
    assert not belongs("layer3.0.conv10", "layer3.0.conv1")  # a sibling whose name extends it
    assert not belongs("layer3.0.conv1.inner", "layer3.0.conv1")  # a child is another module
    assert not belongs("layer3.0", "layer3.0.conv1")


class Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.first = nn.Linear(4, 4)
        self.zero = nn.LayerNorm(4)
        self.unused = nn.Linear(4, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # tied: scaling it would move two modules
        with torch.no_grad():
            self.zero.weight.zero_()  # scaling zeros changes nothing

    def forward(self, ids):
        return self.head(self.zero(self.first(self.embed(ids))) + 1)


def test_fault_candidates_run_own_a_nonzero_weight_and_share_it_with_nothing():
    assert candidates(Tied().eval(), (torch.tensor([[1, 2]]),)) == ["first"]


def test_the_zoo_has_forty_rows_or_more_with_names_the_gate_accepts():
    rows = specs()
    assert len(rows) >= 40
    assert all(re.fullmatch(r"[a-z0-9._-]+", name) for name in rows)
    families = {s.family.split("/")[0] for s in rows.values()}
    assert {"torchvision", "transformers"} <= families


def test_selection_by_glob_and_family_and_an_unknown_name_is_refused():
    rows = specs()
    assert [s.name for s in bench_zoo.select(rows, "*rcnn*", None)] == [
        "fasterrcnn-mobilenet", "maskrcnn-resnet50", "keypointrcnn-resnet50"]
    assert {s.family for s in bench_zoo.select(rows, None, "transformers")} >= {"transformers/decoder"}
    with pytest.raises(SystemExit, match="no row matches nosuch"):
        bench_zoo.select(rows, "resnet18,nosuch", None)


REPORT = {"verdict": "regressed", "first_regression": {
    "model": "m", "provider": "torch-cpu", "layer": "m[0][boxes]", "check": "shape", "value": 1.0, "threshold": 0.0},
    "models": [{"error": None, "status": "regressed", "providers": [{"name": "torch-cpu", "precision": "float32", "error_status": None, "layers": [
        {"layer": "m[0][boxes]", "check": "shape", "message": "torch-cpu shape [272, 4], reference [300, 4]"}]}]}]}


def test_the_reason_is_the_gates_own_message_for_the_first_regression():
    assert gate_message(REPORT) == ("torch-cpu: `m[0][boxes]` (shape): torch-cpu shape [272, 4], "
                                    "reference [300, 4]")
    assert gate_message(None) == "no report"


def test_a_reason_is_one_line_and_at_most_its_limit():
    assert shorten("a\n  b") == "a b"
    assert shorten("x" * 10, limit=10) == "x" * 10
    assert shorten("x" * 11, limit=10) == "x" * 9 + "…"


def test_the_time_limit_ends_the_command_and_its_children(tmp_path):
    child = tmp_path / "child.pid"
    script = (f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
              f"open({str(child)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    start = time.monotonic()
    step = run([sys.executable, "-c", script], tmp_path, {}, timeout=2)
    assert step.timed_out and time.monotonic() - start < 20
    pid = int(child.read_text())
    deadline = time.monotonic() + 5  # the kill is delivered at once; init reaps the orphan shortly after
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(pid), f"child {pid} still running"


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_table_block_is_replaced_and_the_prose_around_it_kept(tmp_path):
    row = {"name": "resnet18", "family": "torchvision/classification", "note": "", "gated": True,
           "status": "gated", "reason": "", "layers": 76, "fault_layer": "layer3.0.conv1",
           "checked": {p: {"checked": 1} for p in table.PROVIDERS},
           "fault": {"first_regression": {"layer": "layer3.0.conv1", "check": "reference-drift", "provider": "torch-cpu"}},
           "steps": {"check": {"wall_s": 8.7, "peak_gb": 1.98}}, "total_s": 30.0}
    data = {"rows": [row, {**row, "name": "ssd", "gated": False, "status": "clean-regressed", "reason": "a | b"}],
            "versions": {"torch": "2"}, "command": "c", "machine": "m", "date": "d", "wall_min": 1.0}
    page = tmp_path / "models.md"
    page.write_text(f"# Models\n\nprose\n\n{table.BEGIN}\nold\n{table.END}\n\nafter\n")
    table.write(page, data)
    text = page.read_text()
    assert "old" not in text and text.startswith("# Models\n\nprose\n") and text.endswith("\nafter\n")
    assert "**1 of 2 rows gated end to end (50%)**" in text
    assert "**clean-regressed**: a \\| b" in text  # a pipe in a message does not break the table


def test_an_update_replaces_rows_in_place_and_refuses_other_versions():
    base = {"versions": {"torch": "2"}, "rows": [{"name": "a", "v": 1}, {"name": "b", "v": 1}]}
    fresh = {"versions": {"torch": "2"}, "command": "c", "date": "d", "commit": "abc", "rows": [{"name": "a", "v": 2}]}
    merged = bench_zoo.merge(base, fresh)
    assert merged["rows"] == [{"name": "a", "v": 2}, {"name": "b", "v": 1}]
    assert merged["reruns"] == [{"command": "c", "date": "d", "commit": "abc", "rows": ["a"]}]
    with pytest.raises(SystemExit, match="versions differ"):
        bench_zoo.merge(base, {**fresh, "versions": {"torch": "3"}})


def test_a_graph_fault_is_named_at_its_module_or_at_the_value_it_was_folded_into():
    assert named_at({"layer": "fc#2"}, "fc") and not named_at({"layer": "fc2"}, "fc")
    assert named_at({"layer": "layer1.0.bn1", "fused": ["layer1.0.conv1"]}, "layer1.0.conv1")


def test_the_graph_fault_rounds_one_initializer_as_float16_stores_it():
    w = np.random.default_rng(0).normal(size=(8, 8)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8])],
                              [numpy_helper.from_array(w, "w")])
    proto, change = rounded(helper.make_model(graph), "w")
    after = numpy_helper.to_array(proto.graph.initializer[0])
    assert np.array_equal(after, w.astype(np.float16).astype(np.float32))
    assert 1e-5 < change < 1e-3  # float16 keeps 11 significant bits: about 2e-4 relative
    with pytest.raises(ValueError, match="no initializer `v`"):
        rounded(proto, "v")
