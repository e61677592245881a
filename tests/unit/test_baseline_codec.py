"""Round trips, the golden payload and frame, deterministic bytes, canonical order, and reading
real files."""

from __future__ import annotations

import copy
import math
import os
import random
import struct
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zstandard

from gate.errors import FormatError
from gate.formats.baseline import (
    FORMAT,
    VERSION,
    decode_baseline,
    encode_baseline,
    read_document,
    write_baseline,
)
from gate.formats.baseline.schema import OLDEST
from tests.conftest import regold
from tests.support.baseline_docs import make_document

GOOD = Path(__file__).resolve().parents[1] / "data" / "good"
GOLDEN = GOOD / f"golden-v{VERSION}.msgpack.zst"


def golden_document() -> dict:
    """Written out by hand so the golden bytes do not depend on any helper."""
    fp = {
        "shape": [2, 2],
        "dtype": "float64",
        "count": 4,
        "nan": 1,
        "posinf": 0,
        "neginf": 1,
        "zero": 1,
        "min": -0.0,
        "max": 1.5,
        "sum": 1.5,
        "sumsq": 2.25,
        "sumabs": 1.5,
        "q": [-0.0, 0.0, 1.5],
        "sketch": struct.pack("<2d", 1.0, -0.5),
    }
    run_fp = {k: v for k, v in fp.items() if k != "sketch"} | {"dtype": "float32", "max": 1.5000001}
    return {
        "format": "parity-gate/baseline",
        "version": 2,
        "model": "golden",
        "meta": {
            "parity_gate": "0.1.0",
            "torch": "2.14.1",
            "onnx": "1.23.0",
            "onnxruntime": "1.31.1",
            "onnxscript": None,
            "exporter": "torchscript",
            "export_fallback": "dynamo export failed",
            "opset": 17,
            "inputs_digest": "0" * 64,
            "weights_digest": "1" * 64,
            "graph_digest": "a" * 64,
            "machine": {"platform": "linux-x86_64", "cpu": "x86_64", "python": "3.11.7"},
            "fingerprint": {"sketch_width": 2, "sketch_seed": 2**64 - 1, "quantiles": [0.0, 0.5, 1.0]},
        },
        "reference": {"device": "cpu", "dtype": "float64"},
        "layers": [
            {"name": "conv", "type": "Conv2d", "fp": fp},
            {"name": "(model)", "type": "Net", "fp": fp | {"min": float("nan"), "max": float("nan")}},
        ],
        "providers": {
            "CPUExecutionProvider": {
                "cpu": {
                    "precision": "float32",
                    "layers": {
                        "conv": {"status": "ok", "err": 1e-7, "fp": run_fp},
                        "(model)": {"status": "folded", "err": None, "fp": None},
                    },
                }
            },
        },
    }


def _level_10_frame(payload: bytes) -> bytes:
    """What this libzstd writes for ``payload`` with the format's frame settings: level 10, the
    content size and a checksum recorded, no dictionary id."""
    cctx = zstandard.ZstdCompressor(level=10, write_content_size=True, write_checksum=True, write_dict_id=False)
    return cctx.compress(payload)


def test_golden_payload_and_frame():
    """The msgpack payload is the format: it must match the golden byte for byte. The compressed
    bytes around it are libzstd's to choose (another libzstd version compresses the same payload
    to other bytes), so the frame is checked for what the format fixes instead."""
    data = encode_baseline(golden_document())
    if regold():
        GOLDEN.write_bytes(data)
    golden = GOLDEN.read_bytes()
    golden_payload = zstandard.ZstdDecompressor().decompress(golden)  # verifies the golden's checksum
    payload = zstandard.ZstdDecompressor().decompress(data)
    assert payload == golden_payload, "msgpack payload changed: format change?"
    for frame in (data, golden):
        params = zstandard.get_frame_parameters(frame)
        assert params.content_size == len(golden_payload)
        assert params.has_checksum and params.dict_id == 0
    assert data == _level_10_frame(payload)  # level 10 with this libzstd, whichever version it is
    assert encode_baseline(golden_document()) == data  # deterministic within a run
    assert _nan_safe(decode_baseline(golden, "golden")) == _nan_safe(golden_document())


def test_every_version_from_the_oldest_reads_and_a_newer_one_says_upgrade():
    """docs/formats.md#versions: a file of any version this parity-gate reads is read as written (the
    golden of version 1 was written before version 2 existed); a newer one gets the upgrade message
    before its keys are looked at, never "unknown key"."""
    old = decode_baseline((GOOD / "golden-v1.msgpack.zst").read_bytes(), "golden-v1")
    assert old["version"] == OLDEST == 1
    assert _nan_safe({**old, "version": VERSION}) == _nan_safe(golden_document())
    newer = msgpack.packb({**golden_document(), "version": VERSION + 1, "added_later": True})
    with pytest.raises(FormatError, match=f"newer parity-gate \\(format version {VERSION + 1}\\); upgrade"):
        decode_baseline(zstandard.ZstdCompressor().compress(newer), "newer")
    unknown = msgpack.packb({**golden_document(), "added_later": True})  # this version's keys are closed
    with pytest.raises(FormatError, match="unknown key 'added_later'"):
        decode_baseline(zstandard.ZstdCompressor(write_content_size=True).compress(unknown), "unknown")


def _nan_safe(doc):
    """Replace NaN by a marker so == can compare documents."""
    if isinstance(doc, dict):
        return {k: _nan_safe(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_nan_safe(v) for v in doc]
    if isinstance(doc, float) and math.isnan(doc):
        return "NaN"
    return doc


def test_decode_equals_input_nan_aware():
    doc = golden_document()
    assert _nan_safe(decode_baseline(encode_baseline(doc), "x")) == _nan_safe(doc)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"n_layers": 0, "providers": ()},
        {"n_layers": 1},
        {"folded": ["layer1"], "n_layers": 4},
        {
            "providers": {
                "CUDAExecutionProvider": {"sm90": "float16", "sm80": "bfloat16"},
                "CPUExecutionProvider": {"cpu": "float32"},
            }
        },
        {"shape": ()},
        {"shape": (0, 3)},
        {"sketch_width": 1},
        {"quantiles": (0.5,)},
    ],
)
def test_round_trip(kw):
    doc = make_document(**kw)
    data = encode_baseline(doc)
    back = decode_baseline(data, "x")
    assert back == doc
    assert encode_baseline(back) == data


def test_frame_records_content_size_and_checksum_and_uses_level_10():
    data = encode_baseline(make_document())
    params = zstandard.get_frame_parameters(data)
    payload = zstandard.ZstdDecompressor().decompress(data)
    assert params.content_size == len(payload)
    assert params.has_checksum and params.dict_id == 0
    assert data == _level_10_frame(payload)
    top = msgpack.unpackb(payload)
    assert list(top)[:2] == ["format", "version"] and top["format"] == FORMAT and top["version"] == VERSION


def _shuffled(obj, rng):
    if isinstance(obj, dict):
        items = list(obj.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(obj, list):
        return [_shuffled(v, rng) for v in obj]
    return obj


def test_bytes_do_not_depend_on_insertion_order():
    doc = make_document(6, providers={"B": {"y": "float16", "x": "float32"}, "A": {"cpu": "float32"}})
    data = encode_baseline(doc)
    rng = random.Random(1)
    for _ in range(5):
        assert encode_baseline(_shuffled(doc, rng)) == data
    back = decode_baseline(data, "x")
    names = [layer["name"] for layer in doc["layers"]]
    assert list(back["providers"]) == ["A", "B"]
    assert list(back["providers"]["B"]) == ["x", "y"]
    for classes in back["providers"].values():
        for entry in classes.values():
            assert list(entry["layers"]) == names  # the order of "layers", not sorted


def test_layers_list_order_is_kept():
    doc = make_document(4)
    doc["layers"].reverse()
    back = decode_baseline(encode_baseline(doc), "x")
    assert [x["name"] for x in back["layers"]] == [x["name"] for x in doc["layers"]]
    assert list(back["providers"]["CPUExecutionProvider"]["cpu"]["layers"]) == [
        x["name"] for x in doc["layers"]
    ]


def test_numbers_are_normalized_to_plain_int_and_float64():
    doc = make_document(2)
    data = encode_baseline(doc)
    odd = copy.deepcopy(doc)
    fp = odd["layers"][0]["fp"]
    fp["shape"] = tuple(np.int64(d) for d in fp["shape"])
    fp["count"] = np.int32(fp["count"])
    fp["min"] = np.float64(fp["min"])
    fp["q"] = tuple(fp["q"])
    fp["sketch"] = bytearray(fp["sketch"])
    assert encode_baseline(odd) == data
    # an int where a float belongs is written as float64; a float32 value is widened
    odd["providers"]["CPUExecutionProvider"]["cpu"]["layers"]["layer0"]["err"] = 0
    back = decode_baseline(encode_baseline(odd), "x")
    err = back["providers"]["CPUExecutionProvider"]["cpu"]["layers"]["layer0"]["err"]
    assert err == 0.0 and isinstance(err, float)
    odd["layers"][0]["fp"]["max"] = np.float32(0.1)
    assert decode_baseline(encode_baseline(odd), "x")["layers"][0]["fp"]["max"] == float(np.float32(0.1))


def test_every_nan_is_written_with_one_bit_pattern():
    doc = make_document(1)
    doc["layers"][0]["fp"]["min"] = float("nan")
    data = encode_baseline(doc)
    for bits in (0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001):
        doc["layers"][0]["fp"]["min"] = struct.unpack("<d", struct.pack("<Q", bits))[0]
        assert encode_baseline(doc) == data
    doc["layers"][0]["fp"]["min"] = np.float32("nan")
    assert encode_baseline(doc) == data


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.pop("meta"), "missing key 'meta'"),
        (lambda d: d.update(extra=1), "unknown key 'extra'"),
        (
            lambda d: d["layers"][0]["fp"].update(sketch=b"123"),
            "layers[0].fp.sketch: is 3 bytes, expected sketch_width * 8 = 64",
        ),
        (lambda d: d["layers"][0].update(name="(model)"), "duplicate layer name '(model)'"),
        (
            lambda d: d["layers"][0]["fp"].update(count=True),
            "layers[0].fp.count: expected an integer, got bool",
        ),
        (lambda d: d["layers"][0]["fp"].update(min="1"), "layers[0].fp.min: expected a float, got str"),
        (lambda d: d["layers"][0].update(name="\ud800"), "lone surrogate"),
        (lambda d: d.update(version=3), "version: 3 exceeds the maximum 2"),
        (lambda d: d["providers"].update({1: {}}), "providers key: expected a string, got int"),
        (lambda d: d["layers"][0]["fp"].update(max=10**400), "layers[0].fp.max: 1000"),
        (lambda d: d["reference"].update(device="cuda:0" * 10), "reference.device: 'cuda:0cuda:0"),
    ],
)
def test_encode_refuses_invalid_documents(mutate, fragment):
    doc = make_document(3)
    mutate(doc)
    with pytest.raises(FormatError) as info:
        encode_baseline(doc)
    assert str(info.value).startswith("baseline document for model 'tiny': ")
    assert fragment in str(info.value)


def test_read_and_write(tmp_path):
    path = tmp_path / "tiny.msgpack.zst"
    doc = make_document(3)
    write_baseline(path, doc)
    assert read_document(path) == doc
    assert path.read_bytes() == encode_baseline(doc)
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.msgpack.zst"]  # no temp or lock files
    assert (path.stat().st_mode & 0o777) == 0o644


def test_write_creates_the_baseline_folder(tmp_path):
    path = tmp_path / "baselines" / "tiny.msgpack.zst"
    write_baseline(path, make_document(1))
    assert read_document(path)["model"] == "tiny"


def test_write_refuses_invalid_document_and_leaves_old_file(tmp_path):
    path = tmp_path / "tiny.msgpack.zst"
    write_baseline(path, make_document(2))
    before = path.read_bytes()
    bad = make_document(2)
    del bad["layers"][0]["fp"]
    with pytest.raises(FormatError, match=f"baseline `{path}`: layers\\[0\\]: missing key 'fp'"):
        write_baseline(path, bad)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.msgpack.zst"]


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_document(tmp_path / "none.msgpack.zst")


def test_directory_symlink_and_fifo_are_format_errors(tmp_path):
    (tmp_path / "dir.msgpack.zst").mkdir()
    with pytest.raises(FormatError, match="dir.msgpack.zst`: not a regular file"):
        read_document(tmp_path / "dir.msgpack.zst")
    real = tmp_path / "real.msgpack.zst"
    write_baseline(real, make_document(1))
    (tmp_path / "link.msgpack.zst").symlink_to(real)
    with pytest.raises(FormatError, match="link.msgpack.zst`: is a symbolic link"):
        read_document(tmp_path / "link.msgpack.zst")
    os.mkfifo(tmp_path / "fifo.msgpack.zst")
    with pytest.raises(FormatError, match="fifo.msgpack.zst`: not a regular file"):  # and does not hang
        read_document(tmp_path / "fifo.msgpack.zst")


def test_version_message_wins_over_schema_errors():
    """A newer file with a different layout still gets the upgrade message."""
    payload = msgpack.packb({"layers": "whatever", "version": 3, "format": FORMAT, "new_key": [1, 2]})
    data = zstandard.ZstdCompressor(level=10).compress(payload)
    with pytest.raises(
        FormatError, match="written by a newer parity-gate \\(format version 3\\); upgrade with"
    ):
        decode_baseline(data, "x")


def _with_audit(doc: dict) -> dict:
    doc["meta"]["op_types"] = ["Conv", "Relu", "Gemm"]
    entry = doc["providers"]["CPUExecutionProvider"]["cpu"]
    entry["latency_ms"] = 1.25
    entry["placement"] = {
        "nodes": 3,
        "by_provider": {"CPUExecutionProvider": 3},
        "fallback_ops": [],
        "fallback_nodes": [],
    }
    return doc


def test_optional_audit_keys_round_trip_in_canonical_order():
    doc = _with_audit(make_document(3))
    data = encode_baseline(doc)
    back = decode_baseline(data, "x")
    assert back == doc
    assert list(back["providers"]["CPUExecutionProvider"]["cpu"]) == [
        "precision",
        "latency_ms",
        "placement",
        "layers",
    ]
    entry = doc["providers"]["CPUExecutionProvider"]["cpu"]
    entry["placement"] = None
    entry["latency_ms"] = None
    assert decode_baseline(encode_baseline(doc), "x") == doc


def test_audit_keys_are_closed_and_checked():
    doc = _with_audit(make_document(2))
    doc["providers"]["CPUExecutionProvider"]["cpu"]["placement"]["extra"] = 1
    with pytest.raises(FormatError, match=r"\.placement: unknown key 'extra'"):
        encode_baseline(doc)
    doc = _with_audit(make_document(2))
    doc["providers"]["CPUExecutionProvider"]["cpu"]["latency_ms"] = float("nan")
    with pytest.raises(FormatError, match=r"latency_ms: NaN is not allowed here"):
        encode_baseline(doc)


def test_numerics_settings_round_trip_sorted_and_must_be_text():
    doc = make_document(2)
    entry = doc["providers"]["CPUExecutionProvider"]["cpu"]
    entry["numerics"] = {"torch.backends.cudnn.benchmark": "True", "torch.backends.cuda.matmul.allow_tf32": "False"}
    back = decode_baseline(encode_baseline(doc), "x")
    got = back["providers"]["CPUExecutionProvider"]["cpu"]
    assert list(got) == ["precision", "numerics", "layers"]
    assert list(got["numerics"]) == ["torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.benchmark"]
    entry["numerics"]["torch.backends.cudnn.benchmark"] = True  # a bool, not the recorded text
    with pytest.raises(FormatError, match=r"numerics\['torch\.backends\.cudnn\.benchmark'\]"):
        encode_baseline(doc)


def test_recorded_latency_is_kept_within_its_band_and_when_nothing_was_timed():
    from gate.formats.baseline.update import LATENCY_BAND, _steady

    assert _steady(2.0 * LATENCY_BAND, 2.0) == 2.0  # at the band's edge: the recorded value stays
    assert _steady(2.0 * LATENCY_BAND * 1.01, 2.0) == 2.0 * LATENCY_BAND * 1.01  # past it: replaced
    assert _steady(2.0 / LATENCY_BAND / 1.01, 2.0) == 2.0 / LATENCY_BAND / 1.01
    assert _steady(None, 2.0) == 2.0  # results collected without timing keep what was recorded
    assert _steady(3.0, None) == 3.0 and _steady(None, None) is None


def test_a_layers_data_dependence_round_trips_after_its_other_keys_and_is_one_of_its_words():
    from gate.formats.baseline import Baseline

    doc = make_document(3)
    doc["layers"][1]["reached"] = "float32"
    doc["layers"][1]["data_dependent"] = "op"
    doc["layers"][2]["data_dependent"] = "runs"
    back = decode_baseline(encode_baseline(doc), "x")
    assert back == doc and list(back["layers"][1])[-2:] == ["reached", "data_dependent"]
    typed = Baseline.from_document(back)
    assert [x.data_dependent for x in typed.layers] == [None, "op", "runs"]
    assert typed.to_document()["layers"] == doc["layers"]  # read and written again: the same layers
    doc["layers"][2]["data_dependent"] = "maybe"
    with pytest.raises(FormatError, match=r"layers\[2\]\.data_dependent: .*'maybe'"):
        decode_baseline(encode_baseline_unchecked(doc), "x")


def encode_baseline_unchecked(doc: dict) -> bytes:
    """The document framed as a writer that skipped the schema would write it."""
    return zstandard.ZstdCompressor(write_content_size=True).compress(msgpack.packb(doc, use_bin_type=True))


def test_a_recorded_cost_round_trips_last_in_meta_and_is_bounded_at_its_limit():
    from gate.formats.baseline import Baseline
    from gate.formats.baseline.schema import MAX_SECONDS

    doc = make_document(2)
    doc["meta"]["seconds"] = MAX_SECONDS  # at the limit: read and written
    back = decode_baseline(encode_baseline(doc), "x")
    assert back == doc and list(back["meta"])[-1] == "seconds"
    assert Baseline.from_document(back).meta.seconds == MAX_SECONDS
    for bad, said in ((math.nextafter(MAX_SECONDS, math.inf), "is outside [0.0, 10000000.0]"),
                      (-1.0, "is outside"), (math.inf, "is outside"), (float("nan"), "NaN is not allowed here")):
        doc["meta"]["seconds"] = bad
        with pytest.raises(FormatError, match=r"^baseline document for model 'tiny': meta\.seconds: ") as info:
            encode_baseline(doc)
        assert said in str(info.value)
    del doc["meta"]["seconds"]  # written before it existed: still read
    assert "seconds" not in decode_baseline(encode_baseline(doc), "x")["meta"]


def test_a_recorded_cost_is_steady_and_kept_by_an_update_that_timed_nothing():
    from dataclasses import replace

    from gate.formats.baseline import Baseline
    from gate.formats.baseline.update import merge_run as merge

    before = Baseline.from_document(decode_baseline(encode_baseline(make_document(2)), "x"))
    before = replace(before, meta=replace(before.meta, seconds=10.0))
    run = _run_of(before)
    for now, kept in ((40.0, 10.0), (2.5, 10.0), (41.0, 41.0), (2.4, 2.4), (None, 10.0)):  # within 4x: kept
        run.meta.seconds = now
        assert merge(run, before).meta.seconds == kept, now


def _run_of(baseline):
    """A run that recorded exactly what ``baseline`` holds (reference layers, no runtime)."""
    from dataclasses import replace

    from gate.core.runs import LayerInfo, ModelRun

    run = ModelRun(baseline.model)
    run.meta = replace(baseline.meta)
    run.layers = [LayerInfo(x.name, x.type, x.fp) for x in baseline.layers]
    return run
