"""Schema of result files (``export``/``collect`` output, merged by ``report``), read with the
same streaming, check-before-allocate reader as baselines: result files arrive as artifacts
from other runners and are as untrusted as a baseline in a pull request."""

from __future__ import annotations

from gate.core.detections import MAX_ATTRIBUTES, MAX_DETECTIONS
from gate.core.runs import MAX_CANDIDATES
from gate.core.status import ErrorStatus, LayerStatus, RunStatus, SiteKind, SkipKind
from gate.core.target import PRECISIONS

from ..baseline.schema import (
    BELOW,
    COUNT,
    DIGEST,
    EXTRA_META,
    LAYER,
    MODEL,
    NAME,
    NUMERICS,
    PLACEMENT,
    PROMOTED,
    REFERENCE_FP,
    SESSION_OPTIONS,
    TEXT,
)
from ..nodes import Array, Bool, Float, Int, NameMap, Nullable, Record, Str

FORMAT, VERSION = "parity-gate/result", 1

STATUS = Str(32, choices=ErrorStatus.values())
NULL_TEXT = Nullable(TEXT)

# An export that failed leaves most of meta empty: every field may be nil or absent here.
META = Record([
    ("parity_gate", NULL_TEXT), ("torch", NULL_TEXT), ("onnx", NULL_TEXT), ("onnxruntime", NULL_TEXT),
    ("onnxscript", NULL_TEXT), ("exporter", NULL_TEXT), ("export_fallback", NULL_TEXT),
    ("opset", Nullable(Int(0, 10_000))),
    ("inputs_digest", Nullable(DIGEST)), ("weights_digest", Nullable(DIGEST)), ("graph_digest", Nullable(DIGEST)),
    ("machine", Nullable(Record([("platform", TEXT), ("cpu", TEXT), ("python", TEXT)]))),
    ("fingerprint", Nullable(Record([
        ("sketch_width", Int(1, "max_sketch_width")), ("sketch_seed", Int(0, 2**64 - 1)),
        ("quantiles", Array(Float(nan=False, lo=0.0, hi=1.0), "max_quantiles")),
    ]))),
    ("op_types", Array(NAME, "max_layers")), ("promoted", PROMOTED), ("below_float64", BELOW), *EXTRA_META,
], optional=("parity_gate", "torch", "onnx", "onnxruntime", "onnxscript", "exporter", "export_fallback", "opset",
             "inputs_digest", "weights_digest", "graph_digest", "machine", "fingerprint", "op_types", "promoted",
             "below_float64", *(k for k, _ in EXTRA_META)))

ONNX_VALUE = Record([
    ("kind", Str(16, choices=SiteKind.values())),
    ("value", NULL_TEXT), ("output", Nullable(Int(0, 1_000_000))), ("reason", NULL_TEXT),
    ("candidates", Array(TEXT, MAX_CANDIDATES)),
], optional=("candidates",))

# A model output's exact metrics from the full tensors (gate.core.exact); inf where NaN/Inf met.
EXACT = Record([
    ("max_abs", Float(nan=False, lo=0.0)), ("max_rel", Float(nan=False, lo=0.0)), ("allclose", Bool()),
    ("mismatched", COUNT), ("count", COUNT), ("rtol", Float(nan=False, lo=0.0)), ("atol", Float(nan=False, lo=0.0)),
    ("worst_index", Array(COUNT, "max_rank")), ("expected", Nullable(Float())), ("actual", Nullable(Float())),
])

# A data-dependent output's detections matched against the reference's (gate.core.detections).
SCORES = Array(Float(nan=False), MAX_DETECTIONS)
DETECTIONS = Record([
    ("boxes", NAME), ("scores", NAME), ("labels", Nullable(NAME)), ("attributes", Array(NAME, MAX_ATTRIBUTES)),
    ("reference", COUNT), ("actual", COUNT), ("reference_scores", SCORES), ("actual_scores", SCORES),
    ("iou", Array(Float(nan=False, lo=0.0, hi=1.0), MAX_DETECTIONS)), ("unmatched_reference", SCORES),
    ("unmatched_actual", SCORES),
    ("attribute_errors", NameMap(NAME, Array(Float(nan=False, lo=0.0), MAX_DETECTIONS), MAX_ATTRIBUTES, "attributes")),
])

# A runtime's fingerprint; the model outputs' carry their sketch (a sweep's pairs and anchor compare them).
OUTPUT_FP = Record(list(REFERENCE_FP.fields.items()), optional=("sketch",))

PROVIDER_LAYER = Record([
    ("status", Str(16, choices=LayerStatus.values())),
    ("err", Nullable(Float(lo=0.0))), ("reason", NULL_TEXT), ("fp", Nullable(OUTPUT_FP)), ("exact", EXACT),
    ("detections", DETECTIONS),
], optional=("exact", "detections"))

PROVIDER = Record([
    ("name", NAME), ("precision", Str(16, choices=PRECISIONS)), ("device", NAME),
    ("status", Str(16, choices=RunStatus.values())), ("reason", NULL_TEXT), ("error_status", Nullable(STATUS)),
    ("latency_ms", Nullable(Float(nan=False, lo=0.0))), ("placement", Nullable(PLACEMENT)),
    ("capture_peak_bytes", Nullable(COUNT)), ("session_options", SESSION_OPTIONS), ("numerics", NUMERICS),
    ("layers", NameMap(NAME, PROVIDER_LAYER, "max_layers", "layers")),
    ("latency_p90_ms", Float(nan=False, lo=0.0)), ("skip", Str(16, choices=SkipKind.values())),
    ("where", TEXT), ("trace", TEXT),
], optional=("session_options", "numerics", "latency_p90_ms", "skip", "where", "trace"))

# A reference layer as the baseline holds it, and whether its values are integers or bools.
RUN_LAYER = Record([*LAYER.fields.items(), ("integer", Bool())], optional=(*LAYER.optional, "integer"))

RUN = Record([
    ("model", MODEL), ("meta", META),
    ("reference", Record([("device", Str(8, choices=("cpu",))), ("dtype", Str(8, choices=("float64", "float32")))])),
    ("error", Nullable(Record([("status", STATUS), ("message", TEXT), ("where", TEXT), ("trace", TEXT)],
                              optional=("where", "trace")))),
    ("layers", Array(RUN_LAYER, "max_layers")),
    ("onnx_map", NameMap(NAME, ONNX_VALUE, "max_layers", "layers")),
    ("providers", Array(PROVIDER, "max_providers")),
])

DOCUMENT = Record([
    ("format", Str(len(FORMAT), choices=(FORMAT,))),
    ("version", Int(VERSION, VERSION)),
    ("runs", Array(RUN, "max_runs")),
])
