"""Result files: what ``export`` and ``collect`` write and ``report`` merges.

A result file is one zstd frame (content size recorded) holding one msgpack map
``{"format": "parity-gate/result", "version": 1, "runs": [...]}``; each run is a
``ModelRun`` (the reference's fingerprints with sketches, and per provider its layers'
fingerprints, errors against the reference, status, latency and node placement). Files
travel between runners as artifacts, so the reader caps sizes before it allocates and
checks the structure before anything uses it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgpack
import zstandard

from gate.baseline import atomic_write_bytes
from gate.errors import FormatError
from gate.fingerprint import Fingerprint
from gate.runs import LayerInfo, ModelRun, ProviderLayer, ProviderRun

MAX_FILE = 256 * 1024 * 1024


def _limits():
    from gate.baseline import Limits

    # A result holds one baseline's worth of data per run and provider: the baseline caps, widened.
    return Limits(max_file_size=MAX_FILE, max_decompressed_size=1024 * 1024 * 1024)


def run_to_dict(run: ModelRun) -> dict[str, Any]:
    return {
        "model": run.name,
        "meta": run.meta,
        "reference": run.reference,
        "error": run.error,
        "layers": [{"name": x.name, "type": x.type, "fp": x.fp.to_dict(sketch=True)} for x in run.layers],
        "onnx_map": {k: {"kind": kind, "value": ref if isinstance(ref, str) else None,
                         "output": ref if isinstance(ref, int) else None, "reason": reason}
                     for k, (kind, ref, reason) in run.onnx_map.items()},
        "providers": [
            {"name": p.name, "precision": p.precision, "device": p.device, "status": p.status,
             "reason": p.reason, "error_status": p.error_status, "latency_ms": p.latency_ms,
             "placement": p.placement, "capture_peak_bytes": p.capture_peak_bytes,
             "layers": {n: {"status": pl.status, "err": pl.err, "reason": pl.reason,
                            "fp": None if pl.fp is None else pl.fp.to_dict(sketch=False)}
                        for n, pl in p.layers.items()}}
            for p in run.providers
        ],
    }


def run_from_dict(d: dict[str, Any]) -> ModelRun:
    run = ModelRun(d["model"], meta=dict(d["meta"]), reference=dict(d["reference"]), error=d["error"])
    run.layers = [LayerInfo(x["name"], x["type"], Fingerprint.from_dict(x["fp"])) for x in d["layers"]]
    run.onnx_map = {k: (v["kind"], v["value"] if v["value"] is not None else v["output"], v["reason"])
                    for k, v in d["onnx_map"].items()}
    for p in d["providers"]:
        prun = ProviderRun(p["name"], p["precision"], p["device"], p["status"], p["reason"], p["error_status"],
                           latency_ms=p["latency_ms"], placement=p["placement"],
                           capture_peak_bytes=p.get("capture_peak_bytes"))
        for n, pl in p["layers"].items():
            prun.layers[n] = ProviderLayer(pl["status"], None if pl["fp"] is None else Fingerprint.from_dict(pl["fp"]),
                                           pl["err"], pl["reason"])
        run.providers.append(prun)
    return run


def write_runs(path: Path, runs: list[ModelRun]) -> None:
    from gate.resultschema import DOCUMENT, FORMAT, VERSION

    doc = DOCUMENT.conform({"format": FORMAT, "version": VERSION, "runs": [run_to_dict(r) for r in runs]}, "",
                           _limits())
    raw = msgpack.packb(doc, use_bin_type=True)
    atomic_write_bytes(path, zstandard.ZstdCompressor(level=3, write_content_size=True).compress(raw))


def read_runs(path: Path) -> list[ModelRun]:
    """The runs in a result file; one FormatError line naming the file and the rule otherwise."""
    from gate.baseline.codec import _decompress
    from gate.baseline.stream import Invalid, StreamReader
    from gate.resultschema import DOCUMENT

    where = f"result file `{path}`"
    limits = _limits()
    try:
        size = path.stat().st_size
        if size > MAX_FILE:
            raise FormatError(f"{where}: {size:,} bytes (limit {MAX_FILE:,})")
        raw = _decompress(path.read_bytes(), limits)
        reader = StreamReader(raw, limits)
        doc = DOCUMENT.read(reader, "", limits)
        if reader.pos != len(raw):
            raise Invalid("", f"trailing data after the msgpack map ({len(raw) - reader.pos:,} more bytes)")
        return [run_from_dict(r) for r in doc["runs"]]
    except FileNotFoundError:
        raise FormatError(f"{where}: does not exist") from None
    except Invalid as exc:
        raise FormatError(f"{where}: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:  # cross-field inconsistencies the schema cannot see
        raise FormatError(f"{where}: malformed ({type(exc).__name__}: {exc})") from None


def merge(runs: list[ModelRun]) -> list[ModelRun]:
    """One run per model: the reference from the first file, providers from all of them.

    Runs of one model must share weights and inputs (the digests); the ONNX bytes may differ
    between runners that exported separately (stack-trace metadata holds file paths). A
    provider seen twice on the same device class keeps its first result.
    """
    merged: dict[str, ModelRun] = {}
    for run in runs:
        first = merged.get(run.name)
        if first is None:
            merged[run.name] = run
            continue
        for key in ("weights_digest", "inputs_digest"):
            if first.meta.get(key) != run.meta.get(key):
                raise FormatError(f"result files disagree on model `{run.name}` ({key} differs): they come "
                                  "from different exports; collect every runner from one `parity-gate export`")
        first.error = first.error or run.error
        have = {(p.name, p.device) for p in first.providers}
        first.providers.extend(p for p in run.providers if (p.name, p.device) not in have)
    return list(merged.values())


def finite_or_none(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x
