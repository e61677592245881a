"""Every crafted file in tests/data/bad/ is refused with one FormatError line naming the rule."""

from __future__ import annotations

import importlib.util
import tracemalloc
from pathlib import Path

import pytest
import zstandard

from gate.errors import FormatError
from gate.formats.baseline import decode_baseline, read_document
from gate.formats.frame import ZSTD_MAGIC

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "data" / "bad"

# file stem -> fragment the message must contain (after "baseline `<path>`: ")
EXPECTED = {
    "empty": "file is empty",
    "not-zstd": "not a zstd frame (starts with 50 4b 03 04)",
    "git-lfs-pointer": "is a Git LFS pointer, not the baseline; run `git lfs pull`",
    "raw-msgpack": "is raw msgpack, not a zstd frame; re-create it with `parity-gate update-baseline`",
    "no-content-size": "zstd frame does not record its content size",
    "huge-content-size": "zstd frame declares 9,000,000,000 bytes (limit 268,435,456)",
    "frame-header-truncated": "bad zstd frame header",
    "dictionary-id": "zstd frame needs dictionary 5",
    "skippable-frame": "not a zstd frame (starts with 50 2a 4d 18)",
    "two-frames": "trailing data after the zstd frame",
    "trailing-garbage": "trailing data after the zstd frame",
    "truncated-frame": "truncated zstd frame",
    "bad-checksum": "corrupt zstd frame",
    "empty-content": "zstd frame is empty",
    "top-array": "top level is array, expected a map",
    "truncated-msgpack": "msgpack data ends early",
    "trailing-msgpack": "trailing data after the msgpack map (1 more bytes)",
    "invalid-utf8": "layers[0].name: malformed msgpack",
    "non-string-key": "map key is integer, expected a string",
    "duplicate-key": "duplicate key 'model'",
    "ext-type": "meta.torch: expected a string, got extension",
    "invalid-byte": "meta: invalid msgpack byte 0xc1",
    "huge-array-header": "layers: array declares 4,294,967,295 entries but only",
    "huge-string-header": "meta.parity_gate: string declares 4,294,967,295 bytes but only 16 follow",
    "deep-nesting": "x: msgpack nesting too deep",
    "too-many-layers": "layers: 100,001 entries exceed the limit 100,000",
    "wrong-format": "format: not a parity-gate baseline (format 'safetensors')",
    "missing-format": "missing key 'format'",
    "newer-version": "written by a newer parity-gate (format version 7); upgrade with `pip install -U parity-gate`",
    "older-version": "format version 0 is no longer supported; re-create it with `parity-gate update-baseline`",
    "version-string": "version: expected an integer, got string '1'",
    "missing-model": "missing key 'model'",
    "unknown-top-key": "unknown key 'extra'",
    "unknown-meta-key": "meta: unknown key 'secret'",
    "unknown-fp-key": "layers[0].fp: unknown key 'mean'",
    "bad-model-name": "model: '../etc' is not a model name",
    "bad-digest": "meta.graph_digest: 'XYZ' is not a lowercase hex sha256",
    "bad-exporter": "meta.exporter: 'onnx' is not one of 'dynamo', 'torchscript'",
    "opset-zero": "meta.opset: 0 is below the minimum 1",
    "reference-device": "reference.device: 'cuda' is not one of 'cpu'",
    "layers-not-array": "layers: expected an array, got map",
    "layer-missing-fp": "layers[0]: missing key 'fp'",
    "empty-layer-name": "layers[0].name: must not be empty",
    "name-too-long": "layers[0].name: string of 1,025 characters exceeds the limit 1,024",
    "duplicate-layer-name": "layers[1].name: duplicate layer name 'layer0' (also layers[0])",
    "sketch-wrong-length": "layers[0].fp.sketch: is 24 bytes, expected sketch_width * 8 = 32",
    "sketch-width-over-limit": "meta.fingerprint.sketch_width: 65,537 exceeds the limit 65,536",
    "sketch-over-limit": "layers[0].fp.sketch: 524,296 bytes exceed the limit 524,288",
    "sketch-missing": "layers[0].fp: missing key 'sketch'",
    "quantile-out-of-range": "meta.fingerprint.quantiles[2]: 1.5 is outside [0.0, 1.0]",
    "negative-seed": "meta.fingerprint.sketch_seed: -1 is below the minimum 0",
    "q-length": "layers[1].fp.q: has 2 values but meta.fingerprint.quantiles has 3",
    "negative-dimension": "layers[0].fp.shape[0]: -1 is below the minimum 0",
    "shape-count-mismatch": "layers[0].fp.count: shape [2, 3] has 6 elements but count is 7",
    "shape-product-overflow": "has more than 9,223,372,036,854,775,807 elements but count is 9,223,372,036,854,775,807",
    "rank-over-limit": "layers[0].fp.shape: 33 entries exceed the limit 32",
    "specials-exceed-count": "layers[0].fp: nan + posinf + neginf + zero = 7 exceeds count 6",
    "float32-value": "meta.fingerprint.quantiles[0]: expected a float64, got float32",
    "int-for-float": "layers[0].fp.min: expected a float64, got integer",
    "bool-for-int": "layers[0].fp.count: expected an integer, got boolean",
    "nan-in-sum": "layers[0].fp.sum: NaN is not allowed here",
    "provider-unknown-layer": "providers['CPUExecutionProvider']['cpu'].layers: layer 'ghost' is not in \"layers\"",
    "control-chars-in-name": "layer '\\x1b[2J\\nok' is not in \"layers\"",
    "provider-fp-with-sketch": "providers['CPUExecutionProvider']['cpu'].layers['layer0'].fp: unknown key 'sketch'",
    "bad-precision": "providers['CPUExecutionProvider']['cpu'].precision: 'float64' is not one of",
    "bad-status": "providers['CPUExecutionProvider']['cpu'].layers['layer0'].status: 'skipped' is not one of",
    "negative-err": "providers['CPUExecutionProvider']['cpu'].layers['layer0'].err: -1.0 is outside",
    "too-many-providers": "providers: 65 providers exceed the limit 64",
    "too-many-device-classes": "providers['CPUExecutionProvider']: 65 device classes exceed the limit 64",
    "provider-not-map": "providers['CPUExecutionProvider']: expected a map, got array",
}


def _stem(p: Path) -> str:
    return p.name.removesuffix(".msgpack.zst")


def test_every_bad_file_has_an_expectation_and_there_are_enough():
    on_disk = {_stem(p) for p in BAD.glob("*.msgpack.zst")}
    assert on_disk == set(EXPECTED)
    assert len(on_disk) >= 30


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_bad_file_is_refused_with_its_rule(stem):
    path = BAD / f"{stem}.msgpack.zst"
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as info:
            read_document(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert message.startswith(f"baseline `{path}`: ")
    assert EXPECTED[stem] in message
    assert "\n" not in message and "\x1b" not in message
    assert message.isascii()
    # the largest crafted file decompresses to ~0.6 MB; nothing may build much more than that
    assert peak < 4 * 1024 * 1024, f"{stem}: peak {peak:,} bytes"


def _held(data: bytes) -> list[tuple]:
    """What a file holds, told without the compressed bytes (another libzstd version compresses
    the same payload to other bytes): each zstd frame as its header's parameters and, when it
    decompresses, its content; skippable frames and anything else as their bytes."""
    out: list[tuple] = []
    while data:
        if data[1:4] == b"\x2a\x4d\x18" and data[0] & 0xF0 == 0x50:  # a skippable frame
            end = 8 + int.from_bytes(data[4:8], "little")
            out.append(("skippable", data[:end]))
            data = data[end:]
            continue
        try:
            params = zstandard.get_frame_parameters(data) if data[:4] == ZSTD_MAGIC else None
        except zstandard.ZstdError:
            params = None
        if params is None:
            out.append(("bytes", data))
            break
        header = (params.content_size, params.has_checksum, params.dict_id)
        dobj = zstandard.ZstdDecompressor().decompressobj()
        try:
            content = dobj.decompress(data)
        except zstandard.ZstdError:
            out.append(("corrupt frame", header))
            break
        if not dobj.eof:
            out.append(("truncated frame", header))
            break
        out.append(("frame", header, content))
        data = dobj.unused_data
    return out


def _refusal(data: bytes) -> str:
    with pytest.raises(FormatError) as info:
        decode_baseline(data, "bad")
    return str(info.value)


def test_committed_bad_files_match_the_generator(tmp_path):
    """A fresh run of the generator gives the committed files: the same bytes where libzstd is the
    one they were written with; else the same frames holding the same content, refused for the
    same rule."""
    spec = importlib.util.spec_from_file_location(
        "make_bad_baselines", ROOT / "scripts" / "make_bad_baselines.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["make_bad_baselines.py", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.glob("*.msgpack.zst")} == {p.name for p in BAD.glob("*.msgpack.zst")}
    for fresh in tmp_path.glob("*.msgpack.zst"):
        data, committed = fresh.read_bytes(), (BAD / fresh.name).read_bytes()
        if data == committed:
            continue
        assert _held(data) == _held(committed), f"{fresh.name} differs: regenerate with scripts/make_bad_baselines.py"
        assert EXPECTED[_stem(fresh)] in _refusal(data)
