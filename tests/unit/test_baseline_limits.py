"""Each Limits field at its exact boundary: the limit is accepted, limit + 1 refused."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import zstandard

from gate.errors import FormatError
from gate.formats.baseline import Limits, decode_baseline, encode_baseline, read_document
from tests.support.baseline_docs import make_document


def _doc(**kw) -> dict:
    return make_document(3, sketch_width=4, quantiles=(0.0, 0.5, 1.0), **kw)


def _accepts(data: bytes, limits: Limits) -> dict:
    return decode_baseline(data, "b.msgpack.zst", limits)


def _refuses(data: bytes, limits: Limits, fragment: str) -> None:
    with pytest.raises(FormatError) as info:
        decode_baseline(data, "b.msgpack.zst", limits)
    assert str(info.value).startswith("baseline `b.msgpack.zst`: ")
    assert fragment in str(info.value)


def _boundary(data: bytes, field: str, value: int, fragment: str) -> None:
    _accepts(data, replace(Limits(), **{field: value}))
    _refuses(data, replace(Limits(), **{field: value - 1}), fragment)


def test_defaults_are_the_documented_ones():
    lim = Limits()
    assert lim.max_file_size == 64 * 2**20
    assert lim.max_decompressed_size == 256 * 2**20
    assert (lim.max_layers, lim.max_name_length, lim.max_providers, lim.max_device_classes) == (
        100_000,
        1024,
        64,
        64,
    )
    assert (lim.max_sketch_width, lim.max_rank) == (65_536, 32)


def test_file_size_boundary(tmp_path):
    data = encode_baseline(_doc())
    n = len(data)
    _boundary(data, "max_file_size", n, f"file is {n:,} bytes (limit {n - 1:,})")
    path = tmp_path / "b.msgpack.zst"
    path.write_bytes(data)
    read_document(path, Limits(max_file_size=n))
    with pytest.raises(FormatError, match=f"file is {n:,} bytes"):
        read_document(path, Limits(max_file_size=n - 1))


def test_decompressed_size_boundary():
    data = encode_baseline(_doc())
    size = zstandard.frame_content_size(data)
    _boundary(data, "max_decompressed_size", size, f"zstd frame declares {size:,} bytes (limit {size - 1:,})")


def test_layer_count_boundary():
    data = encode_baseline(make_document(5, sketch_width=4))
    _boundary(data, "max_layers", 5, "layers: 5 entries exceed the limit 4")


def test_name_length_boundary():
    doc = _doc(providers=())
    doc["layers"][0]["name"] = "n" * 30
    _boundary(
        encode_baseline(doc),
        "max_name_length",
        30,
        "layers[0].name: string of 30 characters exceeds the limit 29",
    )


@pytest.mark.parametrize("ch", ["\u00e9", "\u6f22", "\U0001f600"])
def test_name_length_counts_characters_not_bytes(ch):
    doc = _doc(providers=())
    doc["layers"][0]["name"] = ch * 30
    # refused either from the header (more bytes than 4 * limit) or after decoding
    _boundary(encode_baseline(doc), "max_name_length", 30, "layers[0].name: string of ")


def test_provider_name_length_boundary():
    doc = _doc(providers=("P" * 40,))
    _boundary(
        encode_baseline(doc),
        "max_name_length",
        40,
        "providers key: string of 40 characters exceeds the limit 39",
    )


def test_provider_count_boundary():
    data = encode_baseline(_doc(providers=("A", "B", "C")))
    _boundary(data, "max_providers", 3, "providers: 3 providers exceed the limit 2")


def test_device_class_count_boundary():
    data = encode_baseline(
        _doc(providers={"CUDAExecutionProvider": {"a": "float32", "b": "float16", "c": "bfloat16"}})
    )
    _boundary(
        data,
        "max_device_classes",
        3,
        "providers['CUDAExecutionProvider']: 3 device classes exceed the limit 2",
    )


def test_sketch_width_boundary():
    data = encode_baseline(make_document(2, sketch_width=16))
    _boundary(data, "max_sketch_width", 16, "meta.fingerprint.sketch_width: 16 exceeds the limit 15")


def test_rank_boundary():
    doc = _doc(shape=(1, 2, 1, 3))
    _boundary(encode_baseline(doc), "max_rank", 4, "layers[0].fp.shape: 4 entries exceed the limit 3")


def test_quantile_count_boundary():
    data = encode_baseline(_doc())
    _boundary(data, "max_quantiles", 3, "meta.fingerprint.quantiles: 3 entries exceed the limit 2")


def test_text_length_boundary():
    doc = _doc()
    doc["meta"]["machine"]["cpu"] = "c" * 50
    _boundary(
        encode_baseline(doc),
        "max_text_length",
        50,
        "meta.machine.cpu: string of 50 characters exceeds the limit 49",
    )


def test_model_name_length_boundary_is_fixed_at_128():
    doc = _doc(model="m" * 128)
    assert decode_baseline(encode_baseline(doc), "b")["model"] == "m" * 128
    bad = copy.deepcopy(doc)
    bad["model"] = "m" * 129
    with pytest.raises(FormatError, match="model: string of 129 characters exceeds the limit 128"):
        encode_baseline(bad)


def test_writer_refuses_what_the_default_reader_would():
    doc = make_document(2, sketch_width=65_537)
    with pytest.raises(
        FormatError, match="baseline document for model 'tiny': meta.fingerprint.sketch_width: 65,537 exceeds"
    ):
        encode_baseline(doc)


def _frame_declaring(size: int) -> bytes:
    """A zstd frame header declaring ``size`` bytes, followed by one raw 4-byte last block."""
    import struct

    return (
        b"\x28\xb5\x2f\xfd"
        + bytes([0b1110_0000])
        + struct.pack("<Q", size)
        + struct.pack("<I", (4 << 3) | 1)[:3]
        + b"abcd"
    )


def test_declared_size_over_the_cap_is_refused_before_any_allocation():
    import tracemalloc

    cap = 64 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match=f"zstd frame declares {cap + 1:,} bytes \\(limit {cap:,}\\)"):
            decode_baseline(_frame_declaring(cap + 1), "b", Limits(max_decompressed_size=cap))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024
    # at the cap the frame is decompressed (and found short): the allocation stays within the cap
    with pytest.raises(FormatError, match="truncated zstd frame|corrupt zstd frame"):
        decode_baseline(_frame_declaring(cap), "b", Limits(max_decompressed_size=cap))


def _raw(doc: dict) -> bytes:
    """Pack without the writer's validation, so the reader alone judges."""
    import msgpack

    return zstandard.ZstdCompressor(level=3).compress(msgpack.packb(doc, use_bin_type=True))


def _with(path: tuple, value) -> dict:
    doc = make_document(2, sketch_width=4, quantiles=(0.0, 0.5, 1.0))
    target = doc
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value
    return doc


FP = ("layers", 0, "fp")


@pytest.mark.parametrize(
    ("path", "ok", "bad", "fragment"),
    [
        (
            (*FP, "sketch"),
            b"\0" * 32,
            b"\0" * 33,
            "layers[0].fp.sketch: is 33 bytes, expected sketch_width * 8 = 32",
        ),
        ((*FP, "sketch"), b"\0" * 32, b"\0" * 31, "layers[0].fp.sketch: is 31 bytes"),
        (
            (*FP, "q"),
            [0.0, 0.1, 0.2],
            [0.0, 0.1, 0.2, 0.3],
            "layers[0].fp.q: has 4 values but meta.fingerprint.quantiles has 3",
        ),
        ((*FP, "zero"), 6, 7, "layers[0].fp: nan + posinf + neginf + zero = 7 exceeds count 6"),
        ((*FP, "count"), 6, 5, "layers[0].fp.count: shape [2, 3] has 6 elements but count is 5"),
        ((*FP, "shape"), [0, 3], [-1, 3], "layers[0].fp.shape[0]: -1 is below the minimum 0"),
        (("meta", "opset"), 1, 0, "meta.opset: 0 is below the minimum 1"),
        (("meta", "opset"), 10_000, 10_001, "meta.opset: 10,001 exceeds the maximum 10,000"),
        (
            ("meta", "fingerprint", "quantiles"),
            [0.0, 0.5, 1.0],
            [0.0, 0.5, 1.0000000000000002],
            "is outside [0.0, 1.0]",
        ),
        (
            ("meta", "fingerprint", "sketch_seed"),
            2**64 - 1,
            -1,
            "meta.fingerprint.sketch_seed: -1 is below the minimum 0",
        ),
        ((*FP, "count"), 6, 2**63, "exceeds the maximum 9,223,372,036,854,775,807"),
        (
            ("providers", "CPUExecutionProvider", "cpu", "layers", "layer0", "err"),
            0.0,
            -5e-324,
            "err: -5e-324 is outside",
        ),
    ],
)
def test_rule_boundaries(path, ok, bad, fragment):
    ok_doc = _with(path, ok)
    if path[-1] == "shape":
        ok_doc["layers"][0]["fp"]["count"] = 0
    _accepts(_raw(ok_doc), Limits())
    _refuses(_raw(_with(path, bad)), Limits(), fragment)
