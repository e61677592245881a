"""gate.runners.ort_capture on real ONNX Runtime sessions (CPU EP) of the bundled examples: values
bound with IOBinding give exactly the fingerprints of ``session.run``'s host arrays, a pluggable
on-device fingerprinter receives DLPack producers, and one that declines falls back to a host copy."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from gate import commands
from gate.config import load_config
from gate.fingerprint import fingerprint
from gate.formats.results import Bundle
from gate.runners import ort_capture, ort_session
from gate.runners.ort_capture import Capture, capture, device_of
from tests.support.projects import examples_project


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
        assert (how.device_type, how.host_copies, how.on_device_count) == ("cpu", len(values), 0)


def test_an_on_device_fingerprinter_gets_dlpack_producers(bundles):
    session, feed, values = marked_session(bundles[1])
    seen = []

    def on_device(value):  # what a GPU fingerprinter does with torch.from_dlpack, here with NumPy
        seen.append(value.__dlpack_device__())
        return fingerprint(ort_capture.floating(np.from_dlpack(value)))

    how = Capture(on_device=on_device)
    assert capture(session, feed, values, how) == host_path(session, feed, values)
    assert (how.on_device_count, how.host_copies, len(seen)) == (len(values), 0, len(values))


def test_a_fingerprinter_that_declines_falls_back_to_the_host(bundles):
    session, feed, values = marked_session(bundles[0])
    how = Capture(on_device=lambda value: None)
    assert capture(session, feed, values, how) == host_path(session, feed, values)
    assert (how.on_device_count, how.host_copies) == (0, len(values))


def test_registered_fingerprinters_are_picked_by_the_eps_device():
    assert device_of("CUDAExecutionProvider", {"device_id": "1"}) == ("cuda", 1)
    assert device_of("TensorrtExecutionProvider", {}) == ("cuda", 0)
    assert device_of("OpenVINOExecutionProvider", {"device_type": "GPU"}) == ("cpu", 0)

    def fp(value):
        return None

    ort_capture.register("cuda", fp)
    try:
        assert Capture.for_provider("CUDAExecutionProvider", {}).on_device is fp
        assert Capture.for_provider("CPUExecutionProvider", {}).on_device is None
    finally:
        ort_capture.register("cuda", None)
    assert Capture.for_provider("CUDAExecutionProvider", {}).on_device is None


def test_the_runner_fingerprints_through_iobinding_whole_and_in_segments(bundles):
    for bundle in bundles:
        session, feed, values = marked_session(bundle)
        spec = ort_session.SessionSpec("CPUExecutionProvider")
        proto = onnx.load(str(bundle.model))
        whole = ort_session.run(proto, spec, bundle.inputs(), values, "test", timing_runs=1)
        assert whole.values == host_path(session, feed, values)  # the same marked graph: the same numbers
        assert whole.capture.host_copies == len(values) and whole.segments == 0
        # Past the budget the graph runs a segment at a time. The cuts fall after marked values, so
        # ONNX Runtime fuses what it fuses in the whole marked graph: the same numbers again.
        for budget in (3000, 1000):
            cut = ort_session.run(proto, spec, bundle.inputs(), values, "test", timing_runs=1, capture_bytes=budget,
                                  value_bytes={v: 1000 for v in values})
            assert cut.segments > 1 and cut.peak_capture_bytes == budget
            assert list(cut.values) == values and cut.values == whole.values
            assert cut.capture.host_copies == len(values)
