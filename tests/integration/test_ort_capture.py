"""gate.runners.ort_capture on real ONNX Runtime sessions (CPU EP) of the bundled examples: values
bound with IOBinding give exactly the fingerprints of ``session.run``'s host arrays, an EP's outputs
are bound on its device, and a capture past its budget runs in segments (CPU EP: bit-identical;
OpenVINO EP: within noise)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

from gate import commands
from gate.config import load_config
from gate.fingerprint import fingerprint
from gate.formats.results import Bundle
from gate.runners import ort_capture, ort_session
from gate.runners.ort_capture import Capture, capture, device_of
from tests.support import tools
from tests.support.projects import examples_project

ROOT = Path(__file__).resolve().parents[2]
OV_PYTHON = os.environ.get("PARITY_GATE_OPENVINO_PYTHON")
# Whole marked graph against segments at a budget that cuts after nearly every value, on an EP
# in its own environment (no torch): the EP compiles each segment as a graph of its own.
OV_SEGMENTS = """
import json, sys, onnx
from pathlib import Path
from gate.formats.results import Bundle
from gate.runners import ort_session
out = {}
for folder in sys.argv[1:]:
    b = Bundle(Path(folder)); run = b.read_run()
    values = list(dict.fromkeys(s.value for s in run.onnx_map.values() if s.kind == "value"))
    sizes = {v: 1000 for v in values}
    spec = ort_session.SessionSpec("OpenVINOExecutionProvider")
    proto = onnx.load(str(b.model))
    whole = ort_session.run(proto, spec, b.inputs(), values, "t", timing_runs=0, value_bytes=sizes)
    cut = ort_session.run(proto, spec, b.inputs(), values, "t", timing_runs=0, capture_bytes=2000,
                          value_bytes=sizes, model=b.model)
    out[b.folder.name] = {"segments": cut.segments, "values": list(cut.values) == values,
                          "worst": max(abs(whole.values[v].mean - cut.values[v].mean) / (whole.values[v].std + 1e-12)
                                       for v in values)}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("capture")
    cfg = load_config(examples_project(tmp))
    commands.export_models(cfg, cfg.models, (), tmp / "export")
    return [Bundle(p.parent) for p in sorted((tmp / "export").glob("*/model.onnx"))]


def marked_session(bundle: Bundle):
    run = bundle.read_run()
    values = list(dict.fromkeys(s.value for s in run.onnx_map.values() if s.kind == "value"))
    proto = ort_session.mark_outputs(onnx.load(str(bundle.model)), values)
    session = ort_session.SessionSpec("CPUExecutionProvider").open(proto.SerializeToString(), "test")
    feed = dict(zip([i.name for i in session.get_inputs()], bundle.inputs(), strict=True))
    return session, feed, values


def host_path(session, feed, values):
    """The path before IOBinding: every marked value back as a NumPy array, then fingerprinted."""
    return {n: fingerprint(ort_capture.floating(np.asarray(a))) for n, a in zip(values, session.run(values, feed),
                                                                                 strict=True)}


def test_iobinding_gives_the_host_paths_fingerprints_exactly(bundles):
    assert [b.folder.name for b in bundles] == ["tiny-cnn", "tiny-transformer"]
    for bundle in bundles:
        session, feed, values = marked_session(bundle)
        assert len(values) > 5
        how = Capture.for_provider("CPUExecutionProvider", {})
        bound = capture(session, feed, values, how)
        assert bound == host_path(session, feed, values), bundle.folder.name
        assert how.device_type == "cpu"


def test_the_eps_device_is_where_outputs_are_bound():
    assert device_of("CUDAExecutionProvider", {"device_id": "1"}) == ("cuda", 1)
    assert device_of("TensorrtExecutionProvider", {}) == ("cuda", 0)
    assert device_of("OpenVINOExecutionProvider", {"device_type": "GPU"}) == ("cpu", 0)
    assert Capture.for_provider("CUDAExecutionProvider", {"device_id": 1}) == Capture("cuda", 1)


def test_the_runner_fingerprints_through_iobinding_whole_and_in_segments(bundles):
    for bundle in bundles:
        session, feed, values = marked_session(bundle)
        spec = ort_session.SessionSpec("CPUExecutionProvider")
        proto = onnx.load(str(bundle.model))
        whole = ort_session.run(proto, spec, bundle.inputs(), values, "test", timing_runs=1)
        assert whole.values == host_path(session, feed, values)  # the same marked graph: the same numbers
        assert whole.segments == 0
        # Past the budget the graph runs a segment at a time. The cuts fall after marked values, so
        # ONNX Runtime fuses what it fuses in the whole marked graph: the same numbers again.
        for budget in (3000, 1000):
            cut = ort_session.run(proto, spec, bundle.inputs(), values, "test", timing_runs=1, capture_bytes=budget,
                                  value_bytes={v: 1000 for v in values})
            assert cut.segments > 1 and cut.peak_capture_bytes == budget
            assert list(cut.values) == values and cut.values == whole.values


def test_the_openvino_ep_captures_in_segments_too(bundles):
    if not OV_PYTHON:
        tools.missing("no onnxruntime-openvino environment (scripts/test.sh builds one)")
    proc = subprocess.run([OV_PYTHON, "-c", OV_SEGMENTS, *(str(b.folder) for b in bundles)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(got) == {"tiny-cnn", "tiny-transformer"}
    for name, row in got.items():
        assert row["segments"] > 3 and row["values"], name
        assert row["worst"] < 1e-5, name  # not bit-identical there: OpenVINO fuses within each segment
