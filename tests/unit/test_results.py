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


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_result_files_are_one_line_errors(tmp_path, case):
    make, words = CASES[case]
    path = tmp_path / "r.msgpack.zst"
    path.write_bytes(make())
    with pytest.raises(FormatError) as err:
        read_runs(path)
    message = str(err.value)
    assert message.startswith(f"result file `{path}`") and "\n" not in message
    assert words in message, message


def test_merge_requires_the_same_weights_and_inputs():
    a, b = make_run(device="x86_64-avx2"), make_run(device="cuda-sm90-H100")
    (merged,) = merge([a, b])
    assert [p.target.label for p in merged.providers] == ["x86_64-avx2", "cuda-sm90-H100"]
    c = make_run()
    c.meta.weights_digest = "c" * 64
    with pytest.raises(FormatError, match="weights_digest differs"):
        merge([make_run(), c])
