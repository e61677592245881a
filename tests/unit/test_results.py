"""gate.formats.results: result files travel between runners as artifacts, so the reader is as
distrustful as the baseline reader (streaming schema check before allocation, cross-field
rules, one line naming the file)."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
import zstandard

from gate.core.runs import LayerInfo, Meta, ModelRun, OnnxSite, ProviderLayer, ProviderRun
from gate.core.target import Target
from gate.errors import FormatError
from gate.fingerprint import fingerprint
from gate.formats.results import merge, read_runs, run_to_dict, write_runs


def make_run(name: str = "m", device: str = "x86_64-avx2") -> ModelRun:
    a = np.linspace(-1, 1, 24).reshape(2, 12)
    run = ModelRun(name, Meta(weights_digest="a" * 64, inputs_digest="b" * 64, op_types=["Gemm"]))
    run.layers = [LayerInfo("fc", "Linear", fingerprint(a)), LayerInfo("(model)", "M", fingerprint(a))]
    run.onnx_map = {"fc": OnnxSite("value", "linear"), "(model)": OnnxSite("output", output=0)}
    prun = ProviderRun(Target("CPUExecutionProvider", device), latency_ms=0.5, capture_peak_bytes=96)
    prun.layers = {"fc": ProviderLayer("ok", fingerprint(a.astype(np.float32)), 1e-8),
                   "(model)": ProviderLayer("folded", reason="fused")}
    run.providers.append(prun)
    return run


def frame(doc) -> bytes:
    return zstandard.ZstdCompressor(write_content_size=True).compress(msgpack.packb(doc, use_bin_type=True))


def test_round_trip(tmp_path):
    path = tmp_path / "r.msgpack.zst"
    write_runs(path, [make_run()])
    (run,) = read_runs(path)
    assert run.onnx_map == make_run().onnx_map
    assert run.providers[0].layers["fc"].err == 1e-8 and run.providers[0].capture_peak_bytes == 96
    assert np.array_equal(run.layers[0].fp.sketch, make_run().layers[0].fp.sketch)


def test_integer_layers_round_trip(tmp_path):
    """Whether a layer holds integers decides its reference limit: a report judged from files keeps it."""
    path, made = tmp_path / "r.msgpack.zst", make_run()
    made.layers[1].integer = True
    write_runs(path, [made])
    assert [x.integer for x in read_runs(path)[0].layers] == [False, True]


def valid_doc() -> dict:
    return {"format": "parity-gate/result", "version": 1, "runs": [run_to_dict(make_run())]}


def bomb() -> bytes:
    # An array header claiming 2**31 entries, followed by nothing: refused before anything is built.
    return zstandard.ZstdCompressor(write_content_size=True).compress(
        b"\x83\xa6format\xb2parity-gate/result\xa7version\x01\xa4runs\xdd\x80\x00\x00\x00")


CASES = {
    "not zstd": (lambda: b"hello", "not a zstd frame"),
    "truncated": (lambda: frame(valid_doc())[:-40], "zstd"),
    "unknown key": (lambda: frame({**valid_doc(), "extra": 1}), "unknown key 'extra'"),
    "wrong format": (lambda: frame({**valid_doc(), "format": "parity-gate/baseline"}), "format"),
    "newer version": (lambda: frame({**valid_doc(), "version": 2}), "version"),
    "huge array header": (bomb, "declares 2,147,483,648 entries"),
    "bad status": (lambda: frame({**valid_doc(), "runs": [{**run_to_dict(make_run()), "providers": [
        {**run_to_dict(make_run())["providers"][0], "status": "maybe"}]}]}), "status"),
    "trailing data": (lambda: zstandard.ZstdCompressor(write_content_size=True).compress(
        msgpack.packb(valid_doc(), use_bin_type=True) + b"\x00"), "trailing"),
}


def test_merge_requires_the_same_weights_and_inputs():
    a, b = make_run(device="x86_64-avx2"), make_run(device="cuda-sm90-H100")
    (merged,) = merge([a, b])
    assert [p.target.label for p in merged.providers] == ["x86_64-avx2", "cuda-sm90-H100"]
    c = make_run()
    c.meta.weights_digest = "c" * 64
    with pytest.raises(FormatError, match="weights_digest differs"):
        merge([make_run(), c])
    # a result collected from another export (an export-only change): its graph is not this reference's;
    # a file that records no graph digest (an older writer) is merged as before
    d, e = make_run(), make_run()
    d.meta.graph_digest, e.meta.graph_digest = "d" * 64, "e" * 64
    with pytest.raises(FormatError, match="graph_digest differs"):
        merge([d, e])
    e.meta.graph_digest = None
    assert len(merge([d, e])) == 1


def with_run(**changes) -> bytes:
    run = {**run_to_dict(make_run()), **changes}
    return frame({**valid_doc(), "runs": [run]})


CROSS_FIELD = {
    "duplicate layer": (lambda: with_run(layers=run_to_dict(make_run())["layers"] * 2),
                        "the layer name 'fc' appears twice"),
    "map of no layer": (lambda: with_run(onnx_map={"ghost": {"kind": "absent", "value": None, "output": None,
                                                             "reason": None}}), "'ghost' is not a layer of the run"),
    "provider layer of no layer": (lambda: with_run(providers=[{**run_to_dict(make_run())["providers"][0], "layers": {
        "ghost": {"status": "ok", "err": None, "reason": None, "fp": None}}}]), "'ghost' is not a layer of the run"),
    "label without its precision": (lambda: with_run(providers=[{**run_to_dict(make_run())["providers"][0],
                                                                 "precision": "float16"}]),
                                    "does not carry precision float16"),
    "unknown error status": (lambda: with_run(error={"status": "OOPS", "message": "m"}), "'OOPS' is not one of"),
    "digest not hex": (lambda: with_run(meta={"weights_digest": "abc"}), "is not a lowercase hex sha256"),
    "fingerprint of an unknown dtype": (lambda: with_run(layers=[{**run_to_dict(make_run())["layers"][0], "fp": {
        **run_to_dict(make_run())["layers"][0]["fp"], "dtype": "int8"}}, run_to_dict(make_run())["layers"][1]]),
        "key 'dtype' must be one of"),
    "newer version (upgrade)": (lambda: frame({**valid_doc(), "version": 7}),
                                "written by a newer parity-gate (format version 7); upgrade with"),
}


@pytest.mark.parametrize("case", sorted(CASES) + sorted(CROSS_FIELD))
def test_bad_result_files_are_one_line_errors(tmp_path, case):
    make, words = {**CASES, **CROSS_FIELD}[case]
    path = tmp_path / "r.msgpack.zst"
    path.write_bytes(make())
    with pytest.raises(FormatError) as err:
        read_runs(path)
    message = str(err.value)
    assert message.startswith(f"result file `{path}`") and "\n" not in message
    assert words in message, message


def test_links_directories_and_missing_files_are_refused_by_name(tmp_path):
    real = tmp_path / "r.msgpack.zst"
    write_runs(real, [make_run()])
    (tmp_path / "link.msgpack.zst").symlink_to(real)
    (tmp_path / "dir.msgpack.zst").mkdir()
    for name, words in (("link", "is a symbolic link"), ("dir", "not a regular file"), ("none", "does not exist")):
        with pytest.raises(FormatError, match=f"result file `.*{name}.msgpack.zst`: {words}"):
            read_runs(tmp_path / f"{name}.msgpack.zst")


def test_long_messages_are_clipped_and_a_run_the_schema_refuses_is_not_written(tmp_path):
    from gate.core.runs import RunError

    run = make_run()
    run.error = RunError("INFER_FAIL", "x" * 5000)  # an exporter's error can be that long
    write_runs(tmp_path / "r.msgpack.zst", [run])
    (back,) = read_runs(tmp_path / "r.msgpack.zst")
    assert len(back.error.message) == 4096 and back.error.message.endswith("…")
    run.layers[0].name = "n" * 2000
    run.onnx_map = {}
    with pytest.raises(FormatError, match=r"result file `.*s.msgpack.zst`: cannot write: runs\[0\].layers\[0\].name"):
        write_runs(tmp_path / "s.msgpack.zst", [run])
    assert not (tmp_path / "s.msgpack.zst").exists()


def test_a_bundle_holds_exactly_one_run(tmp_path):
    from gate.formats.results import Bundle

    write_runs(tmp_path / "run.msgpack.zst", [make_run(), make_run("n")])
    with pytest.raises(FormatError, match="holds 2 runs; a bundle's holds exactly one"):
        Bundle(tmp_path).read_run()


def test_placement_source_and_ep_options_round_trip_and_nothing_else_is_taken(tmp_path):
    run = make_run()
    run.providers[0].placement = {"nodes": 3, "by_provider": {"TensorrtExecutionProvider": 2, "CPUExecutionProvider": 1},
                                  "fallback_ops": ["NonZero"], "fallback_nodes": ["NonZero:n"], "source": "profile",
                                  "options": {"trt_fp16_enable": "1"}}
    path = tmp_path / "r.msgpack.zst"
    write_runs(path, [run])
    assert read_runs(path)[0].providers[0].placement == run.providers[0].placement
    doc = valid_doc()
    doc["runs"][0]["providers"][0]["placement"] = {**run.providers[0].placement, "source": "guess"}
    path.write_bytes(frame(doc))
    with pytest.raises(FormatError, match="source"):
        read_runs(path)


def detections_run():
    """A run whose output is data-dependent, and a runtime's detections matched against it."""
    from gate.core.detections import Detections
    from gate.core.status import DataDependence

    run = make_run()
    run.layers[1].data_dependent = DataDependence.OP
    run.providers[0].layers["(model)"] = ProviderLayer("ok", run.layers[1].fp, 0.3, detections=Detections(
        "(model)", "fc", None, (), 3, 2, ((0.9, 0.8, 0.97), (0.4, 0.41, 0.8)), (0.1,), (), {}))
    return run


def test_data_dependence_and_matched_detections_round_trip(tmp_path):
    path = tmp_path / "r.msgpack.zst"
    write_runs(path, [detections_run()])
    (run,) = read_runs(path)
    assert [x.data_dependent for x in run.layers] == [None, "op"]
    assert run.providers[0].layers["(model)"].detections == detections_run().providers[0].layers["(model)"].detections


def _detections_doc(**changes) -> bytes:
    doc = run_to_dict(detections_run())
    layer = doc["providers"][0]["layers"]["(model)"]
    layer["detections"] = {**layer["detections"], **changes}
    return frame({**valid_doc(), "runs": [doc]})


@pytest.mark.parametrize("changes, words", [
    ({"iou": [0.97]}, "one value per pair"),
    ({"actual": 1}, "2 pairs but 3 reference and 1 runtime detections"),
    ({"reference_scores": [float("nan"), 0.4]}, "NaN is not allowed here"),
    ({"iou": [1.5, 0.8]}, "iou[0]"),
    ({"unmatched_reference": [0.1] * 1001}, "unmatched_reference"),
    ({"attribute_errors": {"masks": [0.0, 0.0]}}, "must name an attribute"),
])
def test_bad_detections_are_one_line_errors_naming_the_key(tmp_path, changes, words):
    path = tmp_path / "r.msgpack.zst"
    path.write_bytes(_detections_doc(**changes))
    with pytest.raises(FormatError) as err:
        read_runs(path)
    assert str(err.value).startswith(f"result file `{path}`") and words in str(err.value), str(err.value)
    assert "detections" in str(err.value)


def _with_candidates(count: int) -> ModelRun:
    run = make_run()
    run.onnx_map["fc"] = OnnxSite("absent", reason="two values of its shape",
                                  candidates=tuple(f"v{i}" for i in range(count)))
    return run


def test_candidate_values_round_trip_up_to_their_limit_and_not_one_past(tmp_path):
    from gate.core.fields import Obj
    from gate.core.runs import MAX_CANDIDATES

    path = tmp_path / "r.msgpack.zst"
    write_runs(path, [_with_candidates(MAX_CANDIDATES)])
    (run,) = read_runs(path)
    assert run.onnx_map == _with_candidates(MAX_CANDIDATES).onnx_map
    # files without them keep their bytes
    assert "candidates" not in run_to_dict(make_run())["onnx_map"]["fc"]
    path.write_bytes(with_run(onnx_map=run_to_dict(_with_candidates(MAX_CANDIDATES + 1))["onnx_map"]))
    with pytest.raises(FormatError, match="candidates"):
        read_runs(path)
    site = _with_candidates(MAX_CANDIDATES + 1).onnx_map["fc"].to_dict()  # a store entry's map, read alike
    with pytest.raises(FormatError, match=f"more than {MAX_CANDIDATES} values"):
        OnnxSite.read(Obj(site, "store entry", "onnx_map.fc"))
    assert OnnxSite.read(Obj({**site, "candidates": site["candidates"][:-1]}, "e")) == \
        _with_candidates(MAX_CANDIDATES).onnx_map["fc"]
