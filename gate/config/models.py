"""One ``[[tool.parity-gate.models]]`` table: the model, its inputs, what ships (``transform``,
``artifact``), how it is judged (``output-tolerance``, ``detections``) and the case axes expanded by
``cases``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from gate.config.cases import expand
from gate.config.input_ranges import INT_DEFAULT
from gate.config.reader import Reader
from gate.config.types import (
    DTYPES,
    EXPORTERS,
    DetectionTolerance,
    InputSpec,
    LayerTolerance,
    ModelSpec,
    Tolerance,
)
from gate.core.names import model_name_problem
from gate.core.refs import IDENT, is_ref

MODEL_KEYS = ("name", "factory", "inputs", "exporter", "opset", "opsets", "seed", "tolerance", "layer-tolerances",
              "batch-sizes", "sequence-lengths", "input-shapes", "input-sets", "reference-promotion",
              "dynamic-shapes", "transform", "transform-inputs", "artifact", "output-tolerance", "gradients", "repeats", "detections")
TOLERANCE_KEYS = ("growth", "floor", "reference", "ceiling")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_ref(r: Reader, key: str, ref: str) -> None:
    if not is_ref(ref):
        r.fail(r.key(key), f"`{ref}` is not of the form `package.module:callable`")


def tolerance_values(t: Reader, allowed: tuple[str, ...]) -> dict[str, float]:
    """The numbers of a tolerance-like table; keys outside ``allowed`` are left for the caller's
    ``check_keys`` (a table may hold other keys beside them, as ``layer-tolerances`` holds ``layers``)."""
    return {key: float(t.at_least(key, (int, float), 0)) for key in t.table if key in allowed}


def parse_tolerance(r: Reader, name: str, base: Tolerance) -> Tolerance:
    raw = r.get(name, (dict,), None)
    if raw is None:
        return base
    t = r.child(raw, r.key(name))
    t.check_keys(TOLERANCE_KEYS)  # a misspelt limit would otherwise leave the default in force, unsaid
    return base.merged(tolerance_values(t, TOLERANCE_KEYS))


def parse_model(r: Reader, default_tol: Tolerance, seed: int, opset: int | None, exporter: str) -> list[ModelSpec]:
    r.check_keys(MODEL_KEYS)
    name = r.get("name", (str,), required=True)
    if model_name_problem(name) is not None:
        r.fail(r.key("name"), f"`{name}` is not a valid model name (use 1-128 of a-z 0-9 . _ -)")
    r.owner = f"model `{name}`"  # what follows is said of this model, by name as well as position
    factory = r.get("factory", (str,), required=True)
    check_ref(r, "factory", factory)
    inputs = _inputs(r)
    exp = r.choice("exporter", EXPORTERS, exporter)
    layer_tols = []
    for i, raw in enumerate(r.get("layer-tolerances", (list,), [])):
        t = r.child(raw, r.item("layer-tolerances", i))
        t.check_keys(("layers",) + TOLERANCE_KEYS)
        pattern = t.get("layers", (str,), required=True)
        layer_tols.append(LayerTolerance(pattern, tolerance_values(t, TOLERANCE_KEYS), t.key("layers")))
    base = ModelSpec(name=name, factory=factory, inputs=inputs, exporter=exp, opset=_opset(r, "opset", opset),
                     seed=r.seed(seed), tolerance=parse_tolerance(r, "tolerance", default_tol),
                     layer_tolerances=tuple(layer_tols),
                     reference_promotion=r.get("reference-promotion", (bool,), True), where=r.where,
                     dynamic_shapes=_dynamic_shapes(r, inputs), transform=_transform(r),
                     transform_inputs=_transform_inputs(r),
                     artifact=_artifact(r), output_tolerance=_output_tolerance(r),
                     gradients=r.get("gradients", (bool,), False), repeats=r.at_least("repeats", (int,), 1),
                     detections=_detections(r))
    return expand(r, base)


def _opset(r: Reader, key: str, default: int | None) -> int | None:
    value: int | None = r.get(key, (int,), default)
    if value is not None and not 7 <= value <= 30:
        r.fail(r.key(key), f"opset {value} is out of range (7-30)")
    return value


def _inputs(r: Reader) -> tuple[InputSpec, ...] | str:
    raw = r.get("inputs", (list, str), required=True)
    if isinstance(raw, str) and raw.endswith(".npz"):
        npz = r.files.resolve(r.files.resolve(r.path).parent / raw)
        if not r.files.is_file(npz):
            r.fail(r.key("inputs"), f"input file `{npz}` does not exist")
        return str(npz)
    if isinstance(raw, str):
        check_ref(r, "inputs", raw)
        return raw
    if not raw:
        r.fail(r.key("inputs"), "no inputs declared")
    specs = tuple(_input(r.child(x, r.item("inputs", i))) for i, x in enumerate(raw))
    for i, spec in enumerate(specs):
        if not spec.name or spec.name in [s.name for s in specs[:i]]:
            r.fail(f"{r.item('inputs', i)}.name", f"`{spec.name}`: each input needs a name of its own")
    return specs


def _input(r: Reader) -> InputSpec:
    r.check_keys(("name", "shape", "dtype", "low", "high"))
    name = r.get("name", (str,), required=True)
    shape = r.get("shape", (list,), required=True)
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        r.fail(r.key("shape"), f"expected an array of non-negative integers, got {shape!r}")
    dtype = r.get("dtype", (str,), "float32")
    if dtype not in DTYPES:
        r.fail(r.key("dtype"), f"unsupported dtype `{dtype}` (supported: {', '.join(DTYPES)})")
    low, high = bounds(r, dtype)
    return InputSpec(name=name, shape=tuple(shape), dtype=dtype, low=low, high=high)


# The finite values each input dtype holds: a bound past them draws Inf (floats) or cannot be drawn
# (integers).
_RANGE: dict[str, tuple[float, float]] = {
    "float16": (-65504.0, 65504.0), "bfloat16": (-3.3895313892515355e38, 3.3895313892515355e38),
    "float32": (-3.4028234663852886e38, 3.4028234663852886e38),
    "float64": (-1.7976931348623157e308, 1.7976931348623157e308), "int64": (-2**63, 2**63),
    "int32": (-2**31, 2**31), "int8": (-128, 128), "uint8": (0, 256), "bool": (0, 2)}


_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _bound(r: Reader, key: str, dtype: str) -> float | None:
    """``low`` or ``high`` of an input: a number the dtype holds (an integer's ``high``: one past its
    largest)."""
    value: float | None = r.get(key, (int, float), None)
    lo, hi = _RANGE[dtype]
    if value is not None and not lo <= value <= hi:  # NaN too
        r.fail(r.key(key), f"must be within what {dtype} holds, [{lo:g}, {hi:g}], got {value}")
    if value is not None and dtype not in _FLOATS and not float(value).is_integer():
        r.fail(r.key(key), f"must be a whole number for an input of {dtype}, got {value}")  # drawn whole
    return value


def bounds(r: Reader, dtype: str) -> tuple[float | None, float | None]:
    """``low`` and ``high`` of an input of ``dtype``: each a number it holds, together a range to draw
    from."""
    low, high = (_bound(r, key, dtype) for key in ("low", "high"))
    # the range drawn from, defaults filled as gate.model.inputs fills them
    lo = low if low is not None else (0 if dtype in _FLOATS else INT_DEFAULT[0])
    hi = high if high is not None else (lo + 1.0 if dtype in _FLOATS else 2 if dtype == "bool"
                                        else INT_DEFAULT[1])
    if (low is not None or high is not None) and not (lo < hi and math.isfinite(hi - lo)):
        key = "high" if high is not None else "low"
        r.fail(r.key(key), f"[low, high) is empty or too wide: [{lo}, {hi})")
    return low, high


def _dynamic_shapes(r: Reader, inputs: tuple[InputSpec, ...] | str) -> dict[str, dict[int, str]]:
    """``{ x = { 0 = "batch" } }``: the dimensions exported dynamic, by input name and index."""
    raw = r.get("dynamic-shapes", (dict,), None)
    if raw is None:
        return {}
    key = r.key("dynamic-shapes")
    if not isinstance(inputs, tuple):
        r.fail(key, "needs declared inputs (it names their dimensions)")
    ranks = {i.name: len(i.shape) for i in inputs}
    out: dict[str, dict[int, str]] = {}
    for name, dims in raw.items():
        if name not in ranks:
            r.fail(f"{key}.{name}", f"no declared input is named `{name}` (inputs: {', '.join(ranks)})")
        d = r.child(dims, f"{key}.{name}")
        out[name] = {}
        for index, label in d.table.items():
            if not str(index).isdigit() or int(index) >= ranks[name]:
                d.fail(d.key(str(index)), f"`{index}` is not a dimension of `{name}` (rank {ranks[name]})")
            if not isinstance(label, str) or not IDENT.fullmatch(label):
                d.fail(d.key(str(index)), f"expected a dimension name such as \"batch\", got {label!r}")
            out[name][int(index)] = label
    return out


def _transform(r: Reader) -> str | None:
    ref: str | None = r.get("transform", (str,), None)
    if ref is not None:
        check_ref(r, "transform", ref)
    return ref


def _transform_inputs(r: Reader) -> tuple[str, ...] | None:
    """``transform-inputs = ["deploy/*.yaml", "env:QUANT_MODE"]``: globs relative to the config's
    folder (never out of it) and environment variables the transform reads."""
    raw = r.get("transform-inputs", (list,), None)
    if raw is None:
        return None
    key = r.key("transform-inputs")
    if r.table.get("transform") is None:
        r.fail(key, "is set, but no `transform` is")
    for i, entry in enumerate(raw):
        if not isinstance(entry, str) or not entry.strip():
            r.fail(f"{key}[{i}]", f"expected a glob or `env:NAME`, got {entry!r}")
        if entry.startswith("env:"):
            if not ENV_NAME.fullmatch(entry[4:]):
                r.fail(f"{key}[{i}]", f"`{entry}` does not name an environment variable")
        elif entry.startswith(("/", "\\")) or ".." in Path(entry).parts or ":" in entry:
            r.fail(f"{key}[{i}]", f"`{entry}` is not a path relative to the config's folder")
    return tuple(raw)


def _artifact(r: Reader) -> Path | None:
    raw: str | None = r.get("artifact", (str,), None)
    if raw is None:
        return None
    if not raw.endswith(".onnx"):
        r.fail(r.key("artifact"), f"`{raw}` is not an .onnx file")
    for key in ("opsets", "opset", "exporter"):  # a prebuilt graph: no export to choose them for
        if r.get(key, (object,), None) is not None:
            r.fail(r.key(key), f"the model gates the prebuilt `artifact` `{raw}`: nothing is exported, so no "
                   f"`{key}`")
    return r.files.resolve(r.files.resolve(r.path).parent / raw)


def _output_tolerance(r: Reader) -> tuple[float, float] | None:
    raw: Any = r.get("output-tolerance", (dict,), None)
    if raw is None:
        return None
    t = r.child(raw, r.key("output-tolerance"))
    t.check_keys(("rtol", "atol"))
    values = tolerance_values(t, ("rtol", "atol"))
    return values.get("rtol", 1e-5), values.get("atol", 1e-8)


def _detections(r: Reader) -> DetectionTolerance:
    """``detections = { min-score, iou, score }``: the rule for a detector's data-dependent outputs."""
    raw: Any = r.get("detections", (dict,), None)
    if raw is None:
        return DetectionTolerance()
    t = r.child(raw, r.key("detections"))
    t.check_keys(("min-score", "iou", "score"))
    values = tolerance_values(t, ("min-score", "iou", "score"))
    for key in ("min-score", "iou"):
        if values.get(key, 0.5) > 1:
            t.fail(t.key(key), f"must be <= 1, got {values[key]:g}")
    if values.get("iou", 0.5) < 0.5:  # pairs are matched at 0.5: a lower bound would not be honoured
        t.fail(t.key("iou"), f"must be >= 0.5 (boxes are matched at IoU 0.5), got {values['iou']:g}")
    base = DetectionTolerance()
    return DetectionTolerance(values.get("min-score", base.min_score), values.get("iou", base.iou),
                              values.get("score", base.score))
