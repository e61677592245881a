"""Result files: what ``export`` and ``collect`` write and ``report`` merges (docs/formats.md). They travel
between runners as artifacts, so the reader is the baseline reader's twin: sizes capped, the schema
checked while streaming, every problem one ``FormatError`` line naming the file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgpack
import zstandard

from gate.core.detections import Detections, problem
from gate.core.layers import is_output
from gate.core.names import bad_name, quote
from gate.core.runs import (
    LayerInfo,
    Meta,
    ModelRun,
    OnnxSite,
    ProviderLayer,
    ProviderRun,
    RunError,
    sites_dict,
)
from gate.core.status import DataDependence, ErrorStatus, LayerStatus, RunStatus, SiteKind, SkipKind
from gate.core.target import Target
from gate.errors import FormatError
from gate.fingerprint import Fingerprint

from ..atomic import atomic_write_bytes
from ..frame import FileKind, parse, read_bytes
from ..limits import Limits
from ..stream import Invalid
from .schema import DOCUMENT, FORMAT, VERSION

W = TypeVar("W")  # a validated word's enum

KIND = FileKind("result file", FORMAT, VERSION, "re-create it with `parity-gate export` / `parity-gate collect`")
# A result holds one baseline's worth of data per run and provider: the baseline caps, widened.
LIMITS = Limits(max_file_size=256 * 1024 * 1024, max_decompressed_size=1024 * 1024 * 1024)


def _text(message: str | None) -> str | None:
    """Messages come from exceptions and can be any length: kept to what the reader accepts."""
    cap = LIMITS.max_text_length
    return message if message is None or len(message) <= cap else message[: cap - 1] + "…"


def run_to_dict(run: ModelRun) -> dict[str, Any]:
    return {
        "model": run.name,
        "meta": run.meta.to_dict(),
        "reference": {"device": "cpu", "dtype": run.reference_dtype},
        "error": None if run.error is None else {"status": run.error.error_status, "message": _text(run.error.message),
                                                 **_failure(run.error)},
        "layers": [_layer(x) for x in run.layers],
        "onnx_map": sites_dict(run.onnx_map),
        "providers": [
            {"name": p.name, "precision": p.precision, "device": p.target.label, "status": p.status,
             "reason": _text(p.reason), "error_status": p.error_status, "latency_ms": p.latency_ms,
             "placement": p.placement, "capture_peak_bytes": p.capture_peak_bytes,
             "layers": {n: _provider_layer(pl, is_output(n)) for n, pl in p.layers.items()},
             **({"session_options": p.session_options} if p.session_options else {}),
             **({"latency_p90_ms": p.latency_p90_ms} if p.latency_p90_ms is not None else {}),
             **({"numerics": p.numerics} if p.numerics else {}),
             **({"skip": p.skip} if p.skip is not None else {}), **_failure(p)}
            for p in run.providers
        ],
    }


def _failure(f: ProviderRun | RunError) -> dict[str, str]:
    """Where a failure happened in the user's code, and its traceback: written only when known."""
    return {k: _text(v) for k, v in (("where", f.where), ("trace", f.trace)) if v}


def _provider_layer(pl: ProviderLayer, sketch: bool) -> dict[str, Any]:
    fp = None if pl.fp is None else pl.fp.to_dict(sketch=sketch)
    out = {"status": pl.status, "err": pl.err, "reason": _text(pl.reason), "fp": fp}
    if pl.exact is not None:
        out["exact"] = pl.exact
    if pl.detections is not None:
        out["detections"] = pl.detections.to_dict()
    return out


def _layer(x: LayerInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"name": x.name, "type": x.type, "fp": x.fp.to_dict(sketch=True)}
    if x.reached != "float64":
        out["reached"] = x.reached
    if x.data_dependent is not None:
        out["data_dependent"] = str(x.data_dependent)
    if x.integer:
        out["integer"] = True
    return out


def _detections(d: dict[str, Any] | None, path: str) -> Detections | None:
    if d is None:
        return None
    why = problem(d)
    if why is not None:
        raise Invalid(f"{path}.detections", why)
    return Detections.from_dict(d)


def _provider(p: dict[str, Any]) -> ProviderRun:
    target = Target.parse(p["name"], p["device"])
    if target.precision != p["precision"]:
        raise Invalid(f"providers[{quote(p['name'])}].device", f"{quote(p['device'])} does not carry precision "
                      f"{p['precision']}")
    status = RunStatus(p["status"])
    skip = p.get("skip")
    if status == RunStatus.SKIPPED and skip is None:  # written before skips had kinds
        skip = SkipKind.UNAVAILABLE
    prun = ProviderRun(target, status, p["reason"], _opt(ErrorStatus, p["error_status"]), latency_ms=p["latency_ms"],
                       placement=p["placement"], capture_peak_bytes=p["capture_peak_bytes"],
                       session_options=p.get("session_options"), latency_p90_ms=p.get("latency_p90_ms"),
                       numerics=p.get("numerics"), skip=_opt(SkipKind, skip), where=p.get("where"),
                       trace=p.get("trace"))
    for n, pl in p["layers"].items():
        fp = None if pl["fp"] is None else Fingerprint.from_dict(pl["fp"])
        prun.layers[n] = ProviderLayer(LayerStatus(pl["status"]), fp, pl["err"], pl["reason"], exact=pl.get("exact"),
                                       detections=_detections(pl.get("detections"),
                                                              f"providers[{quote(p['name'])}].layers[{quote(n)}]"))
    return prun


def _opt(word: Callable[[str], W], value: str | None) -> W | None:
    return None if value is None else word(value)


def run_from_dict(d: dict[str, Any]) -> ModelRun:
    """A run from a document the schema has validated; cross-field rules raise ``Invalid``."""
    named = [d["model"], *(x["name"] for x in d["layers"]), *d["onnx_map"],
             *(n for p in d["providers"] for n in (p["name"], *p["layers"]))]
    why = next(filter(None, map(bad_name, named)), None)
    if why is not None:
        raise Invalid(f"run {quote(d['model'])}", why)
    run = ModelRun(d["model"], Meta.from_dict(d["meta"]), d["reference"]["dtype"],
                   error=None if d["error"] is None else RunError(ErrorStatus(d["error"]["status"]), d["error"]["message"],
                                                                  d["error"].get("where"), d["error"].get("trace")))
    run.layers = [LayerInfo(x["name"], x["type"], Fingerprint.from_dict(x["fp"]), reached=x.get("reached", "float64"),
                            data_dependent=_opt(DataDependence, x.get("data_dependent")),
                            integer=x.get("integer", False)) for x in d["layers"]]
    names: set[str] = set()
    for x in run.layers:
        if x.name in names:
            raise Invalid(f"run {quote(run.name)}.layers", f"the layer name {quote(x.name)} appears twice")
        names.add(x.name)
    for key, site in d["onnx_map"].items():
        if key not in names:
            raise Invalid(f"run {quote(run.name)}.onnx_map", f"{quote(key)} is not a layer of the run")
        run.onnx_map[key] = OnnxSite(SiteKind(site["kind"]), site["value"], site["output"], site["reason"],
                                     tuple(site.get("candidates", ())))
    run.providers = [_provider(p) for p in d["providers"]]
    for prun in run.providers:
        unknown = next((n for n in prun.layers if n not in names), None)
        if unknown is not None and names:
            raise Invalid(f"run {quote(run.name)}.providers[{quote(prun.name)}].layers",
                          f"{quote(unknown)} is not a layer of the run")
    return run


def write_runs(path: Path, runs: list[ModelRun]) -> None:
    """Write ``runs`` atomically; a run the schema refuses is one FormatError naming the file."""
    try:
        doc = DOCUMENT.conform({"format": FORMAT, "version": VERSION, "runs": [run_to_dict(r) for r in runs]}, "",
                               LIMITS)
    except Invalid as exc:
        raise FormatError(f"result file `{path}`: cannot write: {exc}") from None
    raw = msgpack.packb(doc, use_bin_type=True)
    atomic_write_bytes(path, zstandard.ZstdCompressor(level=3, write_content_size=True).compress(raw))


def read_runs(path: Path) -> list[ModelRun]:
    """The runs in a result file; one FormatError line naming the file and the rule otherwise."""
    where = f"result file `{path}`"
    try:
        doc = parse(read_bytes(Path(path), LIMITS.max_file_size, KIND), LIMITS, KIND, DOCUMENT)
        return [run_from_dict(r) for r in doc["runs"]]
    except FileNotFoundError:
        raise FormatError(f"{where}: does not exist") from None
    except (Invalid, FormatError) as exc:  # or a fingerprint the schema lets through and the type refuses
        raise FormatError(f"{where}: {exc}") from None


def read_run(path: Path) -> ModelRun:
    runs = read_runs(path)
    if len(runs) != 1:
        raise FormatError(f"result file `{path}`: holds {len(runs)} runs; a bundle's holds exactly one")
    return runs[0]


def merge(runs: list[ModelRun]) -> list[ModelRun]:
    """One run per model: the reference from the first file, targets from all of them. Runs of one
    model must share weights, inputs and the shipped graph's digest (where both record it): a result
    collected from another export would judge that graph's runtimes against this one's reference. A
    target seen twice keeps its first result; a provider skipped on one runner and run on
    another keeps the run (the GPU runner's device class differs from the nominal one of the skip)."""
    merged: dict[str, ModelRun] = {}
    for run in runs:
        first = merged.get(run.name)
        if first is None:
            merged[run.name] = run
            continue
        for key in ("weights_digest", "inputs_digest", "graph_digest"):
            mine, theirs = getattr(first.meta, key), getattr(run.meta, key)
            if mine != theirs and not (key == "graph_digest" and None in (mine, theirs)):
                raise FormatError(f"result files disagree on model `{run.name}` ({key} differs): they come "
                                  "from different exports; collect every runner from one `parity-gate export`")
        first.error = first.error or run.error
        have = {p.target for p in first.providers}
        first.providers.extend(p for p in run.providers if p.target not in have)
    for run in merged.values():  # a provider one runner skipped and another ran: keep what ran
        ran = {(p.name, p.precision) for p in run.providers if p.status != "skipped"}
        run.providers = [p for p in run.providers if p.status != "skipped" or (p.name, p.precision) not in ran]
    return list(merged.values())
