"""The baseline document schema and its cross-field rules. Declared once with ``nodes`` for both the
reader (``DOCUMENT.read``) and the writer (``DOCUMENT.conform``); rules that span fields live in
``check_document`` and run on the result of either walk.
"""

from __future__ import annotations

import re
from typing import Any

from gate.core.names import MAX_MODEL_NAME, MODEL_NAME_RE, quote
from gate.core.status import DataDependence, KeyPart, Stage
from gate.core.target import PRECISIONS
from gate.fingerprint import STATS

from ..nodes import I64_MAX, U64_MAX, Array, Bin, Float, Int, NameMap, Nullable, Record, Str
from ..stream import Invalid

FORMAT = "parity-gate/baseline"
# Any change an older reader would refuse bumps VERSION (docs/formats.md#versions); 2 is version 1 with
# the optional keys added under it, so readers of 1 that meet a file of today say "upgrade".
VERSION, OLDEST = 2, 1

HEX_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
DTYPE = re.compile(r"[a-z][a-z0-9_]*\Z")
NAME = Str("max_name_length")
TEXT = Str("max_text_length", min_len=0)
COUNT = Int(0, I64_MAX)
DIGEST = Str(64, pattern=HEX_SHA256, rule="is not a lowercase hex sha256")
MODEL = Str(MAX_MODEL_NAME, pattern=MODEL_NAME_RE, rule="is not a model name ([a-z0-9._-]+, at most 128 characters)")


# A node per kind of statistic (gate.fingerprint.STATS): values are NaN where nothing is finite, sums never.
_STAT = {"count": COUNT, "value": Float(), "total": Float(nan=False), "square": Float(nan=False)}


def _fingerprint(with_sketch: bool) -> Record:
    fields = [
        ("shape", Array(COUNT, "max_rank")),
        ("dtype", Str(32, pattern=DTYPE, rule="is not a dtype name")),
        *((k, _STAT[kind]) for k, kind in STATS.items()),
        ("q", Array(Float(), "max_quantiles")),
    ]
    if with_sketch:
        fields.append(("sketch", Bin("max_sketch_bytes")))
    return Record(fields)


REFERENCE_FP = _fingerprint(with_sketch=True)
RUNTIME_FP = _fingerprint(with_sketch=False)

LOWER = Str(16, choices=("float32", "float16", "bfloat16"))  # a float dtype below float64
# The reference run, per module call: casts promoted to float64, and the dtype it still computed in.
PROMOTED = NameMap(NAME, Int(1, I64_MAX), "max_layers", "layers")
BELOW = NameMap(NAME, LOWER, "max_layers", "layers")

# What else a run records of its model and graph (all optional; see gate.core.runs.Meta).
MAX_SECONDS = 1e7  # a recorded cost past this (about 4 months) is not a measurement
HEX16 = Str(16, pattern=re.compile(r"[0-9a-f]{16}\Z"), rule="is not 16 hex digits")
EXTRA_META = [
    # The reference run, per module call: of its promoted casts, those to float16/bfloat16 (what ships
    # computes below float32 there).
    ("narrowed", PROMOTED),
    ("normalizations", Array(TEXT, "max_layers")),
    ("training", Record([("modules", Array(NAME, "max_layers")), ("changed_at", Nullable(NAME)),
                         ("change", Nullable(Float(nan=False, lo=0.0)))])),
    ("dynamic_dims", NameMap(NAME, NameMap(Str(10, pattern=re.compile(r"[0-9]+\Z"), rule="is not a dimension index"),
                                           NAME, "max_rank", "dimensions"), "max_layers", "inputs")),
    ("transform", TEXT),
    ("graph_precision", Str(16, choices=("float32", "float16", "bfloat16", "int8"))),
    ("lowered", Array(TEXT, "max_layers")),  # what the shipped graph computes below float32
    ("output_tolerance", Array(Float(nan=False, lo=0.0), 2)),
    # A short digest per parameter and buffer: a weights change names the tensors that changed.
    ("tensor_digests", NameMap(NAME, HEX16, "max_layers", "tensors")),
    # Per parameter and buffer, its values as a multiset: whether a re-expression only moved values.
    ("tensor_sums", NameMap(NAME, Str(72, pattern=re.compile(r"[0-9]{1,19}\.[0-9]{1,19}\.[0-9a-f]{32}\Z"),
                                      rule="is not two counts and 32 hex digits"), "max_layers", "tensors")),
    # A short digest per module of its own code: values may move between layers only where it changed.
    ("module_code", NameMap(NAME, HEX16, "max_layers", "modules")),
    ("module_calls", NameMap(NAME, HEX16, "max_layers", "modules")),  # where each module called its children
    ("random_draws", Array(TEXT, "max_layers")),  # random operations the forward drew with, and where
    # Per input: what a refusal names when the inputs changed.
    ("inputs", Array(Record([("name", NAME), ("dtype", Str(16)), ("shape", Array(Int(0, I64_MAX), "max_rank")),
                             ("digest", HEX16)]), "max_layers")),
    # What the run computed, digested (gate.pipeline.content_key; docs/verdict.md#stages): per part a
    # digest, the plain values a changed part is told by, and each keyed stage's key.
    ("content_key", Record([
        ("key", DIGEST),
        ("parts", NameMap(Str(16, choices=KeyPart.values()), HEX16, 16, "parts")),
        ("ops", COUNT),
        ("sources", NameMap(NAME, HEX16, "max_layers", "sources")),
        ("versions", NameMap(NAME, TEXT, "max_layers", "versions")),
        ("settings", NameMap(NAME, TEXT, "max_layers", "settings")),
        ("unseen", Array(NAME, "max_layers")),
        # Per keyed stage, its key: the parts it reads (docs/verdict.md#stages).
        ("stages", NameMap(Str(16, choices=Stage.values()), DIGEST, 16, "stages")),
    ], optional=("stages",))),
    # Wall seconds the model took when it was recorded: the cost `--shard` balances legs by.
    ("seconds", Float(nan=False, lo=0.0, hi=MAX_SECONDS)),
]

META = Record(
    [
        ("parity_gate", TEXT),
        ("torch", TEXT),
        ("onnx", TEXT),
        ("onnxruntime", TEXT),
        ("onnxscript", Nullable(TEXT)),
        # exporter, opset and graph_digest are nil when the export failed as the baseline was recorded.
        ("exporter", Nullable(Str(16, choices=("dynamo", "torchscript", "artifact")))),
        ("export_fallback", Nullable(TEXT)),
        ("opset", Nullable(Int(1, 10_000))),
        ("inputs_digest", DIGEST),
        ("weights_digest", DIGEST),
        ("graph_digest", Nullable(DIGEST)),
        ("machine", Record([("platform", TEXT), ("cpu", TEXT), ("python", TEXT)])),
        ("fingerprint", Record([("sketch_width", Int(1, "max_sketch_width")),
                                ("sketch_seed", Int(0, U64_MAX)),
                                ("quantiles", Array(Float(nan=False, lo=0.0, hi=1.0), "max_quantiles"))])),
        ("op_types", Array(NAME, "max_layers")),  # ONNX op types of the shipped graph (opset coverage audit)
        ("promoted", PROMOTED),
        ("below_float64", BELOW),
        *EXTRA_META,
    ],
    optional=("op_types", "promoted", "below_float64", *(k for k, _ in EXTRA_META)),
)

# "noise": run-to-run variation measured by `update-baseline --calibrate`; "reached": the coarsest
# precision the reference computed in up to this layer, when below float64; "data_dependent": how
# the layer was recognised as one whose shape depends on values (all optional).
LAYER = Record([("name", NAME), ("type", NAME), ("fp", REFERENCE_FP), ("noise", Float(nan=False, lo=0.0)),
                ("reached", LOWER), ("data_dependent", Str(8, choices=DataDependence.values()))],
               optional=("noise", "reached", "data_dependent"))

RUNTIME_LAYER = Record(
    [
        ("status", Str(16, choices=("ok", "folded", "absent"))),
        ("err", Nullable(Float(lo=0.0))),
        ("fp", Nullable(RUNTIME_FP)),
        ("noise", Float(nan=False, lo=0.0)),
    ],
    optional=("noise",),
)

# where ONNX Runtime placed the graph's nodes (placement audit); optional
PLACEMENT = Record(
    [
        ("nodes", COUNT),
        ("by_provider", NameMap(NAME, COUNT, "max_providers", "providers")),
        ("fallback_ops", Array(NAME, "max_layers")),
        ("fallback_nodes", Array(NAME, "max_layers")),
        ("source", Str(16, choices=("assignment", "profile"))),
        ("options", NameMap(NAME, TEXT, "max_providers", "options")),
    ],
    optional=("source", "options"),
)

# the ONNX Runtime SessionOptions a provider ran with (config `session-options`); optional
SESSION_OPTIONS = Record(
    [
        ("graph-optimization-level", Str(16, choices=("disable", "basic", "extended", "all"))),
        ("execution-mode", Str(16, choices=("sequential", "parallel"))),
        ("intra-op-threads", Int(1, 4096)),
        ("inter-op-threads", Int(1, 4096)),
        ("free-dimension-overrides", NameMap(NAME, Int(1, I64_MAX), "max_layers", "dimensions")),
        ("config-entries", NameMap(NAME, TEXT, "max_layers", "entries")),
    ],
    optional=("graph-optimization-level", "execution-mode", "intra-op-threads", "inter-op-threads",
              "free-dimension-overrides", "config-entries"),
)

# PyTorch's numerics settings a torch provider ran with (flag name -> value as text); optional
NUMERICS = NameMap(NAME, TEXT, "max_layers", "settings")

DEVICE_ENTRY = Record(
    [
        ("precision", Str(16, choices=PRECISIONS)),
        ("latency_ms", Nullable(Float(nan=False, lo=0.0))),
        ("placement", Nullable(PLACEMENT)),
        ("session_options", SESSION_OPTIONS),
        ("numerics", NUMERICS),
        ("layers", NameMap(NAME, RUNTIME_LAYER, "max_layers", "layers")),
    ],
    optional=("latency_ms", "placement", "session_options", "numerics"),
)

DOCUMENT = Record(
    [
        ("format", Str(len(FORMAT), choices=(FORMAT,))),
        ("version", Int(OLDEST, VERSION)),
        ("model", MODEL),
        ("meta", META),
        ("reference", Record([("device", Str(8, choices=("cpu",))),
                              ("dtype", Str(8, choices=("float64", "float32")))])),
        ("layers", Array(LAYER, "max_layers")),
        ("providers", NameMap(NAME, NameMap(NAME, DEVICE_ENTRY, "max_device_classes", "device classes"),
                              "max_providers", "providers")),
    ]
)


def _check_fp(fp: dict[str, Any], path: str, sketch_width: int, n_quantiles: int) -> None:
    shape, count = fp["shape"], fp["count"]
    if 0 in shape:
        elements = 0
    else:
        elements = 1
        for d in shape:  # stops once past the largest count: no huge products
            elements *= d
            if elements > I64_MAX:
                break
    if elements != count:
        got = f"more than {I64_MAX:,}" if elements > I64_MAX else f"{elements:,}"
        raise Invalid(f"{path}.count", f"shape {shape} has {got} elements but count is {count:,}")
    special = fp["nan"] + fp["posinf"] + fp["neginf"] + fp["zero"]
    if special > count:
        raise Invalid(path, f"nan + posinf + neginf + zero = {special:,} exceeds count {count:,}")
    if len(fp["q"]) != n_quantiles:
        raise Invalid(f"{path}.q",
                      f"has {len(fp['q']):,} values but meta.fingerprint.quantiles has {n_quantiles:,}")
    sketch = fp.get("sketch")
    if sketch is not None and len(sketch) != sketch_width * 8:
        raise Invalid(f"{path}.sketch",
                      f"is {len(sketch):,} bytes, expected sketch_width * 8 = {sketch_width * 8:,}")


def check_document(doc: dict[str, Any]) -> dict[str, Any]:
    """Cross-field rules on a structurally valid document; returns it with every provider
    layer map put in the order of "layers" (the canonical order)."""
    fpm = doc["meta"]["fingerprint"]
    width, nq = fpm["sketch_width"], len(fpm["quantiles"])
    order: dict[str, int] = {}
    for i, layer in enumerate(doc["layers"]):
        name = layer["name"]
        if name in order:
            raise Invalid(f"layers[{i}].name",
                          f"duplicate layer name {quote(name)} (also layers[{order[name]}])")
        order[name] = i
        _check_fp(layer["fp"], f"layers[{i}].fp", width, nq)
    for prov, classes in doc["providers"].items():
        for dev, entry in classes.items():
            path = f"providers[{quote(prov)}][{quote(dev)}].layers"
            for name, e in entry["layers"].items():
                if name not in order:
                    raise Invalid(path, f'layer {quote(name)} is not in "layers"')
                if e["fp"] is not None:
                    _check_fp(e["fp"], f"{path}[{quote(name)}].fp", width, nq)
            entry["layers"] = dict(sorted(entry["layers"].items(), key=lambda kv: order[kv[0]]))
    return doc
