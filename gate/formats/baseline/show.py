"""A baseline as stable, line-oriented text (for people, and for git as a textconv driver).

One fact per line, one line per layer, no timestamps, no paths, no column alignment
(renaming one layer must not re-indent the rest), floats exact (``repr``) so every
change to the numbers shows in a diff. Usage: ``python -m gate.formats.baseline.show FILE``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from pathlib import Path

from gate.errors import FormatError

from ..limits import DEFAULT_LIMITS, Limits
from .codec import read_document
from .sets import read_set

_PLAIN = re.compile(r"[!#-~]+\Z")  # printable ASCII without space or '"'


def _name(s: str | None) -> str:
    if s is None:
        return "-"
    if _PLAIN.match(s):
        return s
    return '"' + s.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


def _f(x: float | None) -> str:
    return "-" if x is None else repr(x)


def _stats(fp: dict) -> str:
    finite = fp["count"] - fp["nan"] - fp["posinf"] - fp["neginf"]
    if finite > 0:
        mean = fp["sum"] / finite
        var = max(fp["sumsq"] / finite - mean * mean, 0.0)
        derived = f"mean={mean:.6g} std={math.sqrt(var):.6g} l2={math.sqrt(max(fp['sumsq'], 0.0)):.6g}"
    else:
        derived = "mean=- std=- l2=-"
    shape = "x".join(str(d) for d in fp["shape"]) or "scalar"
    parts = [
        f"{_name(fp['dtype'])}[{shape}]",
        f"min={_f(fp['min'])} max={_f(fp['max'])} {derived}",
        f"nan={fp['nan']} posinf={fp['posinf']} neginf={fp['neginf']} zero={fp['zero']}",
        f"sum={_f(fp['sum'])} sumsq={_f(fp['sumsq'])} sumabs={_f(fp['sumabs'])}",
        "q=" + ",".join(_f(v) for v in fp["q"]),
    ]
    if "sketch" in fp:
        parts.append("sketch=" + hashlib.sha256(fp["sketch"]).hexdigest()[:16])
    return " ".join(parts)


def _meta_lines(doc: dict) -> list[str]:
    meta = doc["meta"]
    fpm = meta["fingerprint"]
    out = [f"parity-gate baseline (format version {doc['version']})", f"model {_name(doc['model'])}"]
    for key in ("parity_gate", "torch", "onnx", "onnxruntime", "onnxscript", "exporter", "export_fallback", "opset",
                "inputs_digest", "weights_digest", "graph_digest"):
        value = meta[key]
        out.append(f"meta {key} {value if isinstance(value, int) else _name(value)}")
    for key in ("platform", "cpu", "python"):
        out.append(f"meta machine.{key} {_name(meta['machine'][key])}")
    out.append(f"meta fingerprint sketch_width={fpm['sketch_width']} sketch_seed={fpm['sketch_seed']} "
               f"quantiles={','.join(_f(q) for q in fpm['quantiles'])}")
    if "op_types" in meta:
        out.append(f"meta op_types {len(meta['op_types'])} " + ",".join(_name(t) for t in meta["op_types"]))
    if "promoted" in meta:
        out.append(f"meta promoted {sum(meta['promoted'].values())} "
                   + ",".join(f"{_name(k)}:{v}" for k, v in meta["promoted"].items()))
    for key in ("normalizations", "training", "dynamic_dims", "transform", "graph_precision", "output_tolerance",
                "seconds"):
        if key in meta:  # what the run recorded of the model and its graph, one compact line each
            out.append(f"meta {key} {json.dumps(meta[key], sort_keys=True, ensure_ascii=True)}")
    if "below_float64" in meta:
        out.append(f"meta below_float64 {len(meta['below_float64'])} "
                   + ",".join(f"{_name(k)}:{v}" for k, v in meta["below_float64"].items()))
    return out


def _entry_lines(prov: str, dev: str, entry: dict) -> list[str]:
    head = f"{_name(prov)} {_name(dev)}"
    line = f"provider {head} precision={entry['precision']} layers={len(entry['layers'])}"
    if "latency_ms" in entry:
        line += f" latency_ms={_f(entry['latency_ms'])}"
    if "session_options" in entry:
        line += f" session_options={json.dumps(entry['session_options'], sort_keys=True, ensure_ascii=True)}"
    if "numerics" in entry:
        line += f" numerics={json.dumps(entry['numerics'], sort_keys=True, ensure_ascii=True)}"
    out = [line]
    placement = entry.get("placement")
    if placement is not None:
        by = ",".join(f"{_name(p)}:{n}" for p, n in sorted(placement["by_provider"].items()))
        out.append(f"placement {head} nodes={placement['nodes']} by_provider={by or '-'} "
                   f"fallback_ops={','.join(map(_name, placement['fallback_ops'])) or '-'} "
                   f"fallback_nodes={len(placement['fallback_nodes'])}")
    for name, e in entry["layers"].items():
        fp = "-" if e["fp"] is None else _stats(e["fp"])
        out.append(f"provider-layer {head} {_name(name)} status={e['status']} err={_f(e['err'])} {fp}")
    return out


def render_text(doc: dict) -> str:
    """Text of a (validated) baseline document; same document, same text."""
    out = _meta_lines(doc)
    out.append(f"reference device={doc['reference']['device']} dtype={doc['reference']['dtype']}")
    out.append(f"layers {len(doc['layers'])}")
    for layer in doc["layers"]:
        reached = f" reached={layer['reached']}" if "reached" in layer else ""
        reached += f" data_dependent={layer['data_dependent']}" if "data_dependent" in layer else ""
        out.append(f"layer {_name(layer['name'])} type={_name(layer['type'])}{reached} {_stats(layer['fp'])}")
    for prov in sorted(doc["providers"]):
        for dev in sorted(doc["providers"][prov]):
            out += _entry_lines(prov, dev, doc["providers"][prov][dev])
    return "\n".join(out) + "\n"


def render_set(doc: dict) -> str:
    """Text of a (validated) baseline set: each case's text under a ``case NAME`` line."""
    out = [f"sweep {_name(doc['sweep'])} cases {len(doc['cases'])}"]
    for name, case in doc["cases"].items():
        out.append(f"case {_name(name)}")
        out.append(render_text(case).rstrip("\n"))
    return "\n".join(out) + "\n"


def render_file(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> str:
    """``render_text`` of the baseline (or ``render_set`` of the baseline set) at ``path``
    (FormatError / FileNotFoundError as read_baseline)."""
    try:
        return render_text(read_document(Path(path), limits))
    except FormatError as not_a_baseline:
        try:
            return render_set(read_set(Path(path), limits))
        except FormatError:
            raise not_a_baseline from None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    textconv = "--textconv" in args
    files = [a for a in args if a != "--textconv"]
    if len(files) != 1:
        print("usage: python -m gate.formats.baseline.show [--textconv] FILE", file=sys.stderr)
        return 2
    try:
        text = render_file(files[0])
    except (FormatError, FileNotFoundError) as e:
        msg = str(e) if isinstance(e, FormatError) else f"baseline `{files[0]}`: no such file"
        if textconv:  # show the problem inside the diff instead of failing `git diff`
            sys.stdout.write(f"invalid baseline: {msg}\n")
            return 0
        print(f"error: {msg}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
