#!/usr/bin/env python3
"""Write the crafted malicious/broken baseline files of tests/data/bad/ (one per reader rule).

    PYTHONPATH=. python scripts/make_bad_baselines.py [OUT_DIR]     # default: tests/data/bad

Deterministic: running it again gives the same bytes (tests check the committed files
against a fresh run). The expected message of each file is asserted in
tests/unit/test_baseline_bad_files.py.
"""

from __future__ import annotations

import copy
import struct
import sys
from collections.abc import Callable
from pathlib import Path

import msgpack
import zstandard

from tests.support.baseline_docs import make_document

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "bad"


def base() -> dict:
    return make_document(2, sketch_width=4, quantiles=(0.0, 0.5, 1.0), model="bad", seed=7)


def pack(obj: object, **kw) -> bytes:
    return msgpack.packb(obj, use_bin_type=True, **kw)


def zst(payload: bytes, content_size: bool = True) -> bytes:
    return zstandard.ZstdCompressor(level=10, write_content_size=content_size, write_checksum=True).compress(
        payload
    )


def raw_map(pairs: list[tuple[object, object]]) -> bytes:
    """A msgpack map from (key, value) pairs; values that are bytes subclasses of Raw go in verbatim."""
    out = bytearray(b"\xdf" + struct.pack(">I", len(pairs)))
    for k, v in pairs:
        out += pack(k)
        out += v.data if isinstance(v, Raw) else pack(v)
    return bytes(out)


class Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data


def mutated(fn: Callable[[dict], object]) -> bytes:
    doc = copy.deepcopy(base())
    fn(doc)
    return zst(pack(doc))


def top_pairs(doc: dict) -> list[tuple[str, object]]:
    return list(doc.items())


def zstd_header(content_size: int, dict_id: int = 0) -> bytes:
    """A hand-made zstd frame: single-segment header + one raw last block of 4 bytes."""
    if dict_id:
        fhd = 0b0010_0001  # single segment, 1-byte dict id, 1-byte content size
        header = bytes([fhd, dict_id, content_size])
    else:
        fhd = 0b1110_0000  # 8-byte content size, single segment
        header = bytes([fhd]) + struct.pack("<Q", content_size)
    block = bytes([0b001, 0, 0])[:0] + struct.pack("<I", (4 << 3) | 1)[:3]  # raw block, last, 4 bytes
    return b"\x28\xb5\x2f\xfd" + header + block + b"abcd"


def _set(path: str, value: object) -> Callable[[dict], None]:
    """Set doc[path] where path is dotted with integer indexes: 'layers.0.fp.count'."""

    def fn(doc: dict) -> None:
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        target = doc
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value

    return fn


def _del(path: str) -> Callable[[dict], None]:
    def fn(doc: dict) -> None:
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        target = doc
        for k in keys[:-1]:
            target = target[k]
        del target[keys[-1]]

    return fn


def _provider_layers(doc: dict) -> dict:
    return doc["providers"]["CPUExecutionProvider"]["cpu"]["layers"]


def cases() -> dict[str, bytes]:
    payload = pack(base())
    good = zst(payload)
    c: dict[str, bytes] = {}

    # --- zstd frame ---
    c["empty"] = b""
    c["not-zstd"] = b"PK\x03\x04 this is a zip file, not a baseline"
    c["git-lfs-pointer"] = (
        b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 1234\n"
    )
    c["raw-msgpack"] = payload
    c["no-content-size"] = zst(payload, content_size=False)
    c["huge-content-size"] = zstd_header(9_000_000_000)
    c["frame-header-truncated"] = b"\x28\xb5\x2f\xfd\xe0"
    c["dictionary-id"] = zstd_header(4, dict_id=5)
    c["skippable-frame"] = b"\x50\x2a\x4d\x18" + struct.pack("<I", 4) + b"skip" + good
    c["two-frames"] = good + good
    c["trailing-garbage"] = good + b"junk"
    c["truncated-frame"] = good[:-10]
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    c["bad-checksum"] = bytes(bad)
    c["empty-content"] = zst(b"")

    # --- msgpack ---
    c["top-array"] = zst(pack([1, 2, 3]))
    c["truncated-msgpack"] = zst(payload[:-5])
    c["trailing-msgpack"] = zst(payload + pack(1))
    marker = base()
    marker["layers"][0]["name"] = "AAAA"
    marker["providers"] = {}
    c["invalid-utf8"] = zst(pack(marker).replace(b"\xa4AAAA", b"\xa4\xff\xfe\xfd\xfc"))
    c["non-string-key"] = zst(raw_map([(1, 2)] + top_pairs(base())))
    c["duplicate-key"] = zst(raw_map(top_pairs(base()) + [("model", "other")]))
    c["ext-type"] = mutated(_set("meta.torch", msgpack.ExtType(5, b"x")))
    c["invalid-byte"] = zst(raw_map([(k, Raw(b"\xc1") if k == "meta" else v) for k, v in top_pairs(base())]))
    huge_array = b"\xdd" + struct.pack(">I", 2**32 - 1)
    c["huge-array-header"] = zst(
        raw_map([(k, Raw(huge_array) if k == "layers" else v) for k, v in top_pairs(base())])
    )
    huge_str = b"\xdb" + struct.pack(">I", 2**32 - 1) + b"x" * 16
    c["huge-string-header"] = zst(
        raw_map(
            [(k, v) for k, v in top_pairs(base())][:3]
            + [("meta", Raw(raw_map([("parity_gate", Raw(huge_str))])))]
        )
    )
    # first, so that even the version pass has to walk it
    c["deep-nesting"] = zst(raw_map([("x", Raw(b"\x91" * 100_000 + b"\xc0"))] + top_pairs(base())))
    many_layers = b"\xdd" + struct.pack(">I", 100_001) + b"\xc0" * 100_001
    c["too-many-layers"] = zst(
        raw_map([(k, Raw(many_layers) if k == "layers" else v) for k, v in top_pairs(base())])
    )

    # --- format and version ---
    c["wrong-format"] = mutated(_set("format", "safetensors"))
    c["missing-format"] = mutated(_del("format"))
    c["newer-version"] = mutated(_set("version", 7))
    c["older-version"] = mutated(_set("version", 0))
    c["version-string"] = mutated(_set("version", "1"))

    # --- schema ---
    c["missing-model"] = mutated(_del("model"))
    c["unknown-top-key"] = mutated(_set("extra", 1))
    c["unknown-meta-key"] = mutated(_set("meta.secret", "x"))
    c["unknown-fp-key"] = mutated(_set("layers.0.fp.mean", 0.5))
    c["bad-model-name"] = mutated(_set("model", "../etc"))
    c["bad-digest"] = mutated(_set("meta.graph_digest", "XYZ"))
    c["bad-exporter"] = mutated(_set("meta.exporter", "onnx"))
    c["opset-zero"] = mutated(_set("meta.opset", 0))
    c["reference-device"] = mutated(_set("reference.device", "cuda"))
    c["layers-not-array"] = mutated(_set("layers", {}))
    c["layer-missing-fp"] = mutated(_del("layers.0.fp"))
    c["empty-layer-name"] = mutated(_set("layers.0.name", ""))
    c["name-too-long"] = mutated(_set("layers.0.name", "n" * 1025))
    c["duplicate-layer-name"] = mutated(_set("layers.1.name", "layer0"))
    c["sketch-wrong-length"] = mutated(_set("layers.0.fp.sketch", b"\0" * 24))
    c["sketch-width-over-limit"] = mutated(_set("meta.fingerprint.sketch_width", 65_537))
    c["sketch-over-limit"] = mutated(_set("layers.0.fp.sketch", b"\0" * (65_537 * 8)))
    c["sketch-missing"] = mutated(_del("layers.0.fp.sketch"))
    c["quantile-out-of-range"] = mutated(_set("meta.fingerprint.quantiles", [0.0, 0.5, 1.5]))
    c["negative-seed"] = mutated(_set("meta.fingerprint.sketch_seed", -1))
    c["q-length"] = mutated(_set("layers.1.fp.q", [0.0, 1.0]))
    c["negative-dimension"] = mutated(_set("layers.0.fp.shape", [-1, 3]))
    c["shape-count-mismatch"] = mutated(_set("layers.0.fp.count", 7))
    c["shape-product-overflow"] = mutated(
        lambda d: d["layers"][0]["fp"].update(shape=[2**62, 2**62, 4], count=2**63 - 1)
    )
    c["rank-over-limit"] = mutated(lambda d: d["layers"][0]["fp"].update(shape=[1] * 33, count=1))
    c["specials-exceed-count"] = mutated(_set("layers.0.fp.nan", 7))
    c["float32-value"] = zst(pack(base(), use_single_float=True))
    c["int-for-float"] = mutated(_set("layers.0.fp.min", 1))
    c["bool-for-int"] = mutated(_set("layers.0.fp.count", True))
    c["nan-in-sum"] = mutated(_set("layers.0.fp.sum", float("nan")))
    c["provider-unknown-layer"] = mutated(
        lambda d: _provider_layers(d).update(ghost=_provider_layers(d)["layer0"])
    )
    c["control-chars-in-name"] = mutated(
        lambda d: _provider_layers(d).update({"\x1b[2J\nok": _provider_layers(d)["layer0"]})
    )
    c["provider-fp-with-sketch"] = mutated(
        _set("providers.CPUExecutionProvider.cpu.layers.layer0.fp.sketch", b"\0" * 32)
    )
    c["bad-precision"] = mutated(_set("providers.CPUExecutionProvider.cpu.precision", "float64"))
    c["bad-status"] = mutated(_set("providers.CPUExecutionProvider.cpu.layers.layer0.status", "skipped"))
    c["negative-err"] = mutated(_set("providers.CPUExecutionProvider.cpu.layers.layer0.err", -1.0))
    c["too-many-providers"] = mutated(lambda d: d["providers"].update({f"P{i}": {} for i in range(64)}))
    c["too-many-device-classes"] = mutated(
        lambda d: d["providers"]["CPUExecutionProvider"].update(
            {f"d{i}": d["providers"]["CPUExecutionProvider"]["cpu"] for i in range(64)}
        )
    )
    c["provider-not-map"] = mutated(_set("providers.CPUExecutionProvider", []))
    return c


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else OUT
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.msgpack.zst"):
        old.unlink()
    made = cases()
    for name, data in made.items():
        (out / f"{name}.msgpack.zst").write_bytes(data)
    print(f"wrote {len(made)} files to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
