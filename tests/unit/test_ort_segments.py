"""gate.runners.ort_segments: a graph whose marked values pass the capture budget is cut into
segments that run one after another on real ONNX Runtime sessions, each holding at most the
budget, and give the fingerprints the whole graph with every value marked gives."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from gate.runners import ort_segments, ort_session
from gate.runners.ort_capture import Capture, capture

CPU = ort_session.SessionSpec("CPUExecutionProvider")
F = TensorProto.FLOAT


def masked_chain(n: int) -> tuple[onnx.ModelProto, list[str]]:
    """x -> (Mul by a mask made once at the start, Add 1) x n: the mask is read by every step,
    like a transformer's attention mask, so it crosses every cut."""
    nodes = [helper.make_node("Sigmoid", ["x"], ["mask"])]
    names, prev = [], "x"
    for i in range(n):
        nodes += [helper.make_node("Mul", [prev, "mask"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", "one"], [f"v{i}"])]
        names.append(f"v{i}")
        prev = f"v{i}"
    graph = helper.make_graph(nodes, "masked", [helper.make_tensor_value_info("x", F, [8])],
                              [helper.make_tensor_value_info(prev, F, [8])],
                              [helper.make_tensor("one", F, [1], [1.0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10), names


def sizes_of(names, each=32):
    return {v: each for v in names}


def test_segments_fit_the_budget_and_carry_only_what_later_segments_read():
    proto, names = masked_chain(6)
    plan = ort_segments.plan(proto.graph, names, sizes_of(names), 64, {"x"})
    assert [s.marked for s in plan] == [["v0", "v1"], ["v2", "v3"], ["v4", "v5"]]
    assert plan[0].inputs == ["x"] and plan[0].keep == ["v1", "mask"] and plan[0].initializers == ["one"]
    assert plan[1].inputs == ["v1", "mask"] and plan[1].keep == ["v3"]  # the mask stays held from segment 0
    assert plan[2].inputs == ["v3", "mask"] and plan[2].keep == []
    assert ort_segments.last_reader(plan) == {"x": 0, "v1": 1, "mask": 2, "v3": 2}
    assert [n for s in plan for n in s.nodes] == list(range(len(proto.graph.node)))  # every node once, in order


def test_cuts_fall_right_after_the_node_that_makes_a_marked_value():
    proto, names = masked_chain(4)
    plan = ort_segments.plan(proto.graph, names, sizes_of(names), 32, {"x"})
    for seg in plan[:-1]:
        assert proto.graph.node[seg.nodes[-1]].output[0] == seg.marked[-1]  # no Mul left without its Add


def test_segmented_capture_gives_the_whole_marked_graphs_fingerprints():
    proto, names = masked_chain(12)
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    whole = ort_session.run(proto, CPU, [x], names, "chain", timing_runs=0, value_bytes=sizes_of(names))
    cut = ort_session.run(proto, CPU, [x], names, "chain", timing_runs=0, capture_bytes=96,
                          value_bytes=sizes_of(names))
    assert (whole.segments, cut.segments) == (0, 4)
    assert cut.peak_capture_bytes == 96 and whole.peak_capture_bytes == 12 * 32
    assert list(cut.values) == names and cut.values == whole.values


def test_a_subgraph_reading_an_outer_value_makes_it_an_input_of_its_segment():
    then = helper.make_graph([helper.make_node("Add", ["a", "b"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", F, [4])])
    other = helper.make_graph([helper.make_node("Sub", ["a", "b"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", F, [4])])
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("Neg", ["x"], ["b"]),
             helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
    graph = helper.make_graph(nodes, "branchy", [helper.make_tensor_value_info("x", F, [4])],
                              [helper.make_tensor_value_info("y", F, [4])],
                              [helper.make_tensor("zero", F, [], [0.0])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    assert ort_segments.reads(proto.graph.node[-1]) == ["c", "a", "b"]
    names, sizes = ["a", "b", "y"], {"a": 16, "b": 16, "y": 16}
    plan = ort_segments.plan(proto.graph, names, sizes, 16, {"x"})
    assert plan[-1].marked == ["y"] and {"a", "b"} <= set(plan[-1].inputs)
    x = np.array([1, -2, 3, 0.5], dtype=np.float32)
    whole = ort_session.run(proto, CPU, [x], names, "branchy", timing_runs=0, value_bytes=sizes)
    cut = ort_session.run(proto, CPU, [x], names, "branchy", timing_runs=0, capture_bytes=16, value_bytes=sizes)
    assert cut.segments == 3 and cut.values == whole.values


def test_a_marked_value_no_node_makes_falls_back_to_whole_graph_runs():
    proto, names = masked_chain(4)
    marked = ["x", *names]  # a graph input: no segment makes it
    assert ort_segments.plan(proto.graph, marked, sizes_of(marked), 32, {"x"}) is None
    x = np.ones(8, dtype=np.float32)
    run = ort_session.run(proto, CPU, [x], marked, "chain", timing_runs=0, capture_bytes=64,
                          value_bytes=sizes_of(marked))
    assert run.segments == 0 and list(run.values) == marked and run.peak_capture_bytes == 64


def test_values_crossing_a_cut_are_held_as_arrays_that_own_their_memory():
    proto, names = masked_chain(2)
    plan = ort_segments.plan(proto.graph, names, sizes_of(names), 32, {"x"})
    sub = ort_segments.model(proto, plan[0], {"x": ort_segments.tensor_type(np.ones(8, np.float32))}, 0)
    session = CPU.open(sub.SerializeToString(), "segment")
    held: dict = {}
    fps = capture(session, {"x": np.ones(8, np.float32)}, plan[0].marked, Capture(), plan[0].keep, held)
    assert list(fps) == ["v0"] and sorted(held) == ["mask", "v0"]
    # An OrtValue from the binding would keep the binding, the session and all its outputs alive.
    assert all(isinstance(v, np.ndarray) and v.flags.owndata for v in held.values())
    np.testing.assert_allclose(held["mask"], 1 / (1 + np.exp(-1)), rtol=1e-6)


def test_outputs_kept_for_exact_metrics_do_not_hold_the_sessions_arena():
    """session.run's arrays can be views of the session's arena: kept as they are, they held all of
    it (0.5 GB for GPT-2 at sequence 2048) through the capture that follows."""
    proto, names = masked_chain(2)
    run = ort_session.run(proto, CPU, [np.ones(8, np.float32)], names, "chain", timing_runs=0, keep_outputs=True)
    assert len(run.arrays) == 1 and all(a.flags.owndata for a in run.arrays)
