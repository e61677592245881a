"""A baseline as stable, line-oriented text (for people, and for git as a textconv driver).

No timestamps, paths or column alignment (renaming one layer must not re-indent the rest). git converts
each side alone, so by default a layer's numbers are rounded to the reference's noise and digested, and
a runtime entry is one line without timings; ``full=True`` (``show --all``) prints every number exactly.
``parity-gate show`` (``gate.cli.show_cmd``) prints it, and is the textconv driver.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
from pathlib import Path
from typing import Any

from gate.errors import FormatError
from gate.fingerprint import STATS

from .changes import noise
from .codec import read_document
from .sets import read_set

_PLAIN = re.compile(r"[!#-~]+\Z")  # printable ASCII without space or '"'


def quoted(s: str | None) -> str:
    """A name as one word of the text: plain ASCII as it is, anything else quoted with escapes."""
    if s is None:
        return "-"
    if _PLAIN.match(s):
        return s
    return '"' + s.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


# The statistics of each kind (gate.fingerprint.STATS), in their order.
_OF = {kind: tuple(k for k, of in STATS.items() if of == kind)
       for kind in ("count", "value", "total", "square")}


def _f(x: float | None) -> str:
    return "-" if x is None else repr(x)


def _stats(fp: dict[str, Any]) -> str:
    finite = fp["count"] - fp["nan"] - fp["posinf"] - fp["neginf"]
    if finite > 0:
        mean = fp["sum"] / finite
        var = max(fp["sumsq"] / finite - mean * mean, 0.0)
        derived = f"mean={mean:.6g} std={math.sqrt(var):.6g} l2={math.sqrt(max(fp['sumsq'], 0.0)):.6g}"
    else:
        derived = "mean=- std=- l2=-"
    shape = "x".join(str(d) for d in fp["shape"]) or "scalar"
    parts = [
        f"{quoted(fp['dtype'])}[{shape}]",
        " ".join(f"{k}={_f(fp[k])}" for k in _OF["value"]) + f" {derived}",
        " ".join(f"{k}={fp[k]}" for k in _OF["count"] if k != "count"),
        " ".join(f"{k}={_f(fp[k])}" for k, kind in STATS.items() if kind in ("total", "square")),
        "q=" + ",".join(_f(v) for v in fp["q"]),
    ]
    if "sketch" in fp:
        parts.append("sketch=" + hashlib.sha256(fp["sketch"]).hexdigest()[:16])
    return " ".join(parts)


def _levels(x: float | None, unit: float) -> str:
    """``x`` as a whole number of ``unit``s: the same for every value within noise of it."""
    if x is None or not math.isfinite(x) or unit <= 0 or not math.isfinite(unit):
        return repr(x)
    return str(round(x / unit))


def _rounded(x: float | None, unit: float) -> str:
    if x is None or not math.isfinite(x) or unit <= 0 or not math.isfinite(unit):
        return _f(x)
    return f"{round(x / unit) * unit:.6g}"


def _compact(fp: dict[str, Any], rel_noise: float) -> str:
    """Shape, l2, range and a digest of every number rounded to ``rel_noise`` of the tensor's scale
    (values by its RMS, sums by its l2 times sqrt(n), the sketch by its l2)."""
    finite = max(fp["count"] - fp["nan"] - fp["posinf"] - fp["neginf"], 1)
    l2 = math.sqrt(max(fp["sumsq"], 0.0))
    unit, total = l2 / math.sqrt(finite) * rel_noise, l2 * math.sqrt(finite) * rel_noise
    levels = [*(_levels(fp[k], unit) for k in _OF["value"]), *(_levels(v, unit) for v in fp["q"]),
              *(_levels(fp[k], total) for k in _OF["total"]),
              *(_levels(fp[k], l2 * l2 * rel_noise) for k in _OF["square"]),
              *(str(fp[k]) for k in _OF["count"])]
    if "sketch" in fp:
        sketch = [x for (x,) in struct.iter_unpack("<d", fp["sketch"])]
        levels += [_levels(x, l2 * rel_noise) for x in sketch]
    shown = unit * 1e4  # the range at 1e-6 of the scale: never a digit of noise
    shape = "x".join(str(d) for d in fp["shape"]) or "scalar"
    odd = "".join(f" {k}={fp[k]}" for k in ("nan", "posinf", "neginf") if fp[k])
    digest = hashlib.sha256(",".join(levels).encode()).hexdigest()[:12]
    return (f"{quoted(fp['dtype'])}[{shape}] l2={_rounded(l2, l2 * 1e-6)} min={_rounded(fp['min'], shown)} "
            f"max={_rounded(fp['max'], shown)}{odd} values={digest}")


def _meta_lines(doc: dict[str, Any], full: bool = True) -> list[str]:
    meta = doc["meta"]
    fpm = meta["fingerprint"]
    head = f"parity-gate baseline (format version {doc['version']})"
    if not full:
        head += ": numbers rounded to the reference's noise (every number: parity-gate show --all)"
    out = [head, f"model {quoted(doc['model'])}"]
    for key in ("parity_gate", "torch", "onnx", "onnxruntime", "onnxscript", "exporter", "export_fallback", "opset",
                "inputs_digest", "weights_digest", "graph_digest"):
        value = meta[key]
        out.append(f"meta {key} {value if isinstance(value, int) else quoted(value)}")
    for key in ("platform", "cpu", "python"):
        out.append(f"meta machine.{key} {quoted(meta['machine'][key])}")
    out.append(f"meta fingerprint sketch_width={fpm['sketch_width']} sketch_seed={fpm['sketch_seed']} "
               f"quantiles={','.join(_f(q) for q in fpm['quantiles'])}")
    if "op_types" in meta:
        out.append(f"meta op_types {len(meta['op_types'])} " + ",".join(quoted(t) for t in meta["op_types"]))
    if "promoted" in meta:
        out.append(f"meta promoted {sum(meta['promoted'].values())} "
                   + ",".join(f"{quoted(k)}:{v}" for k, v in meta["promoted"].items()))
    for key in ("normalizations", "training", "dynamic_dims", "transform", "graph_precision", "output_tolerance",
                "seconds"):
        # what the run recorded of the model and its graph, one compact line each (no timing unless full)
        if key in meta and (full or key != "seconds"):
            out.append(f"meta {key} {json.dumps(meta[key], sort_keys=True, ensure_ascii=True)}")
    if "below_float64" in meta:
        out.append(f"meta below_float64 {len(meta['below_float64'])} "
                   + ",".join(f"{quoted(k)}:{v}" for k, v in meta["below_float64"].items()))
    return out


def _largest_err(entry: dict[str, Any]) -> str:
    """The largest error of the entry's layers, as the power of ten above it: a runtime's error against
    the reference is rounding noise itself, so its digits move with every change of the model."""
    errs = [e["err"] for e in entry["layers"].values() if e["err"] is not None and math.isfinite(e["err"])]
    if not errs:
        return "err=-"
    worst = max(errs)
    return "err=0" if worst <= 0 else f"err<1e{math.ceil(math.log10(worst)):+03d}"


def _entry_lines(prov: str, dev: str, entry: dict[str, Any], full: bool = True) -> list[str]:
    head = f"{quoted(prov)} {quoted(dev)}"
    line = f"provider {head} precision={entry['precision']} layers={len(entry['layers'])}"
    if not full:
        line += " " + _largest_err(entry)
    elif "latency_ms" in entry:
        line += f" latency_ms={_f(entry['latency_ms'])}"
    for key in ("session_options", "numerics"):
        if key in entry:
            line += f" {key}={json.dumps(entry[key], sort_keys=True, ensure_ascii=True)}"
    out = [line]
    placement = entry.get("placement")
    if placement is not None:
        by = ",".join(f"{quoted(p)}:{n}" for p, n in sorted(placement["by_provider"].items()))
        out.append(f"placement {head} nodes={placement['nodes']} by_provider={by or '-'} "
                   f"fallback_ops={','.join(map(quoted, placement['fallback_ops'])) or '-'} "
                   f"fallback_nodes={len(placement['fallback_nodes'])}")
    if not full:
        odd: dict[str, list[str]] = {}
        for name, e in entry["layers"].items():
            if e["status"] != "ok":
                odd.setdefault(e["status"], []).append(quoted(name))
        if odd:
            out.append(f"statuses {head} " + " ".join(f"{k}={','.join(v)}" for k, v in odd.items()))
        return out
    for name, e in entry["layers"].items():
        fp = "-" if e["fp"] is None else _stats(e["fp"])
        noisy = f" noise={_f(e['noise'])}" if e.get("noise") is not None else ""
        out.append(f"provider-layer {head} {quoted(name)} status={e['status']} err={_f(e['err'])}{noisy} "
                   f"{fp}")
    return out


def render_text(doc: dict[str, Any], full: bool = False) -> str:
    """Text of a (validated) baseline document; same document, same text. Compact unless ``full``: only
    a move beyond the reference's noise changes a layer's line."""
    ref = doc["reference"]["dtype"]
    out = _meta_lines(doc, full)
    out.append(f"reference device={doc['reference']['device']} dtype={ref}")
    out.append(f"layers {len(doc['layers'])}")
    for layer in doc["layers"]:
        reached = f" reached={layer['reached']}" if "reached" in layer else ""
        reached += f" data_dependent={layer['data_dependent']}" if "data_dependent" in layer else ""
        reached += f" noise={_f(layer['noise'])}" if layer.get("noise") is not None else ""
        fp = (_stats(layer["fp"]) if full else
              _compact(layer["fp"], noise(ref, layer.get("reached", "float64"), layer.get("noise"))))
        out.append(f"layer {quoted(layer['name'])} type={quoted(layer['type'])}{reached} {fp}")
    for prov in sorted(doc["providers"]):
        for dev in sorted(doc["providers"][prov]):
            out += _entry_lines(prov, dev, doc["providers"][prov][dev], full)
    return "\n".join(out) + "\n"


def render_set(doc: dict[str, Any], full: bool = False) -> str:
    """Text of a (validated) baseline set: each case's text under a ``case NAME`` line."""
    out = [f"sweep {quoted(doc['sweep'])} cases {len(doc['cases'])}"]
    for name, case in doc["cases"].items():
        out.append(f"case {quoted(name)}")
        out.append(render_text(case, full).rstrip("\n"))
    return "\n".join(out) + "\n"


def render_file(path: str | Path, full: bool = False) -> str:
    """``render_text`` of the baseline (or ``render_set`` of the baseline set) at ``path``
    (FormatError / FileNotFoundError as read_baseline)."""
    try:
        return render_text(read_document(Path(path)), full)
    except FormatError as not_a_baseline:
        try:
            return render_set(read_set(Path(path)), full)
        except FormatError:
            raise not_a_baseline from None
