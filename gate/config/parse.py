"""Parse and validate the ``[tool.parity-gate]`` table into ``gate.config.types``.

Every error names the file and the dotted key (``tool.parity-gate.models[0].inputs[0].shape``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from gate.config.providers import canonical_provider
from gate.config.types import (
    DTYPES,
    EXPORTERS,
    Config,
    InputSpec,
    Isolation,
    LayerTolerance,
    ModelSpec,
    ProviderSpec,
    Tolerance,
)
from gate.core.names import MAX_MODEL_NAME, model_name_problem
from gate.core.target import PRECISIONS
from gate.errors import ConfigError


class _Reader:
    """Typed access to one TOML table that remembers where it is, for messages."""

    def __init__(self, table: Any, path: Path, where: str):
        self.path, self.where = path, where
        if not isinstance(table, dict):
            self.fail(where, f"expected a table, got {_kind(table)}")
        self.table = table

    def fail(self, key: str, message: str) -> None:
        raise ConfigError(f"{self.path}: `{key}`: {message}")

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def check_keys(self, allowed: tuple[str, ...]) -> None:
        for name in self.table:
            if name not in allowed:
                self.fail(self.key(name), f"unknown key (allowed: {', '.join(allowed)})")

    def get(self, name: str, kinds: tuple[type, ...], default: Any = None, required: bool = False) -> Any:
        if name not in self.table:
            if required:
                self.fail(self.key(name), "required key is missing")
            return default
        value = self.table[name]
        if isinstance(value, bool) and bool not in kinds:
            self.fail(self.key(name), f"expected {_names(kinds)}, got a boolean")
        if not isinstance(value, kinds):
            self.fail(self.key(name), f"expected {_names(kinds)}, got {_kind(value)}")
        return value


def _kind(value: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", int: "an integer", float: "a float",
            bool: "a boolean"}.get(type(value), type(value).__name__)


def _names(kinds: tuple[type, ...]) -> str:
    return " or ".join(_kind(k()) if k is not type(None) else "nothing" for k in kinds)


TOP_KEYS = ("baseline-dir", "providers", "models", "tolerance", "seed", "opset", "exporter", "isolation",
            "placement", "max-slowdown", "require")
ISOLATION_KEYS = ("enabled", "timeout", "memory-budget-mb", "capture-memory-mb")
MODEL_KEYS = ("name", "factory", "inputs", "exporter", "opset", "seed", "tolerance", "layer-tolerances",
              "batch-sizes", "input-sets", "reference-promotion")
TOLERANCE_KEYS = ("growth", "floor", "reference", "ceiling")


def parse(section: Any, path: Path, prefix: str) -> Config:
    top = _Reader(section, path, prefix)
    top.check_keys(TOP_KEYS)
    root = path.resolve().parent
    baseline_dir = root / top.get("baseline-dir", (str,), "baselines")
    providers = _parse_providers(top)
    default_tol = _parse_tolerance(top, "tolerance", Tolerance())
    seed = top.get("seed", (int,), 0)
    opset = top.get("opset", (int,), None)
    exporter = top.get("exporter", (str,), "dynamo")
    if exporter not in EXPORTERS:
        top.fail(top.key("exporter"), f"expected one of {', '.join(EXPORTERS)}, got `{exporter}`")
    models_raw = top.get("models", (list,), required=True)
    if not models_raw:
        top.fail(top.key("models"), "no models configured")
    models = []
    for i, raw in enumerate(models_raw):
        models.extend(_parse_model(_Reader(raw, path, f"{top.key('models')}[{i}]"), default_tol, seed, opset, exporter))
    names = [m.name for m in models]
    for name in names:
        if names.count(name) > 1:
            top.fail(top.key("models"), f"model name `{name}` is used twice")
    placement = top.get("placement", (str,), "warn")
    if placement not in ("warn", "fail", "off"):
        top.fail(top.key("placement"), f"expected warn, fail or off, got `{placement}`")
    slowdown = top.get("max-slowdown", (int, float), None)
    if slowdown is not None and slowdown < 0:
        top.fail(top.key("max-slowdown"), f"must be >= 0, got {slowdown}")
    require = tuple(_canonical(top, top.key("require"), n) for n in top.get("require", (list,), []))
    return Config(path=path, root=root, baseline_dir=baseline_dir, providers=providers, models=tuple(models),
                  isolation=_parse_isolation(top), placement=placement,
                  max_slowdown=None if slowdown is None else float(slowdown), require=require)


def _parse_isolation(top: _Reader) -> Isolation:
    raw = top.get("isolation", (dict,), None)
    if raw is None:
        return Isolation()
    r = _Reader(raw, top.path, top.key("isolation"))
    r.check_keys(ISOLATION_KEYS)
    values = {}
    for key, field_name, kinds in (("enabled", "enabled", (bool,)), ("timeout", "timeout_s", (int, float)),
                                   ("memory-budget-mb", "memory_mb", (int,)),
                                   ("capture-memory-mb", "capture_mb", (int,))):
        value = r.get(key, kinds, None)
        if value is None:
            continue
        if not isinstance(value, bool) and value <= 0:
            r.fail(r.key(key), f"must be > 0, got {value}")
        values[field_name] = value
    return Isolation(**values)


def _parse_providers(top: _Reader) -> tuple[ProviderSpec, ...]:
    raw = top.get("providers", (list,), ["torch-cpu", "CPUExecutionProvider"])
    out: list[ProviderSpec] = []
    for i, item in enumerate(raw):
        key = f"{top.key('providers')}[{i}]"
        if isinstance(item, str):
            spec = ProviderSpec(_canonical(top, key, item))
        elif isinstance(item, dict):
            r = _Reader(item, top.path, key)
            r.check_keys(("name", "options", "precision", "isolated"))
            name = _canonical(top, r.key("name"), r.get("name", (str,), required=True))
            precision = r.get("precision", (str,), "float32")
            if precision not in PRECISIONS:
                r.fail(r.key("precision"), f"expected one of {', '.join(PRECISIONS)}, got `{precision}`")
            spec = ProviderSpec(name, dict(r.get("options", (dict,), {})), precision,
                                r.get("isolated", (bool,), None))
        else:
            top.fail(key, f"expected a provider name or a table, got {_kind(item)}")
        if any((p.name, p.precision) == (spec.name, spec.precision) for p in out):
            top.fail(key, f"provider `{spec.name}` is listed twice")
        out.append(spec)
    if not out:
        top.fail(top.key("providers"), "no providers configured")
    return tuple(out)


def _canonical(top: _Reader, key: str, name: str) -> str:
    try:
        return canonical_provider(name)
    except ConfigError as exc:
        top.fail(key, str(exc))
        raise  # unreachable


def _parse_tolerance(r: _Reader, name: str, base: Tolerance) -> Tolerance:
    raw = r.get(name, (dict,), None)
    if raw is None:
        return base
    t = _Reader(raw, r.path, r.key(name))
    return base.merged(_tolerance_values(t, TOLERANCE_KEYS))


def _tolerance_values(t: _Reader, allowed: tuple[str, ...]) -> dict[str, float]:
    values = {}
    for key in t.table:
        if key not in allowed:
            continue
        value = t.get(key, (int, float))
        if not value >= 0:
            t.fail(t.key(key), f"must be >= 0, got {value}")
        values[key] = float(value)
    return values


def _parse_model(r: _Reader, default_tol: Tolerance, seed: int, opset: int | None,
                 exporter: str) -> list[ModelSpec]:
    r.check_keys(MODEL_KEYS)
    name = r.get("name", (str,), required=True)
    if model_name_problem(name) is not None:
        r.fail(r.key("name"), f"`{name}` is not a valid model name (use 1-128 of a-z 0-9 . _ -)")
    factory = r.get("factory", (str,), required=True)
    _check_ref(r, "factory", factory)
    inputs_raw = r.get("inputs", (list, str), required=True)
    if isinstance(inputs_raw, str) and inputs_raw.endswith(".npz"):
        npz = (r.path.resolve().parent / inputs_raw).resolve()
        if not npz.is_file():
            r.fail(r.key("inputs"), f"input file `{npz}` does not exist")
        inputs: tuple[InputSpec, ...] | str = str(npz)
    elif isinstance(inputs_raw, str):
        _check_ref(r, "inputs", inputs_raw)
        inputs = inputs_raw
    else:
        if not inputs_raw:
            r.fail(r.key("inputs"), "no inputs declared")
        inputs = tuple(_parse_input(_Reader(x, r.path, f"{r.key('inputs')}[{i}]")) for i, x in enumerate(inputs_raw))
    exp = r.get("exporter", (str,), exporter)
    if exp not in EXPORTERS:
        r.fail(r.key("exporter"), f"expected one of {', '.join(EXPORTERS)}, got `{exp}`")
    model_opset = r.get("opset", (int,), opset)
    if model_opset is not None and not 7 <= model_opset <= 30:
        r.fail(r.key("opset"), f"opset {model_opset} is out of range (7-30)")
    tol = _parse_tolerance(r, "tolerance", default_tol)
    layer_tols = []
    for i, raw in enumerate(r.get("layer-tolerances", (list,), [])):
        t = _Reader(raw, r.path, f"{r.key('layer-tolerances')}[{i}]")
        t.check_keys(("layers",) + TOLERANCE_KEYS)
        pattern = t.get("layers", (str,), required=True)
        layer_tols.append(LayerTolerance(pattern, _tolerance_values(t, TOLERANCE_KEYS)))
    base = ModelSpec(name=name, factory=factory, inputs=inputs, exporter=exp, opset=model_opset,
                     seed=r.get("seed", (int,), seed), tolerance=tol, layer_tolerances=tuple(layer_tols),
                     reference_promotion=r.get("reference-promotion", (bool,), True), where=r.where)
    return _cases(r, base)


def _cases(r: _Reader, base: ModelSpec) -> list[ModelSpec]:
    """One model per (batch size, input set): numerics differ between batch sizes, and one
    input set can hide what another shows. Cases are named ``<name>.b<batch>.s<set>``."""
    batches = r.get("batch-sizes", (list,), None)
    sets = r.get("input-sets", (int,), 1)
    if sets < 1 or sets > 64:
        r.fail(r.key("input-sets"), f"expected 1 to 64 input sets, got {sets}")
    if batches is not None:
        if not batches or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in batches):
            r.fail(r.key("batch-sizes"), f"expected an array of positive integers, got {batches!r}")
        if len(set(batches)) != len(batches):
            r.fail(r.key("batch-sizes"), "a batch size is listed twice")
        if not isinstance(base.inputs, tuple):
            r.fail(r.key("batch-sizes"), "needs declared inputs (their first dimension is the batch)")
    if batches is None and sets == 1:
        return [base]
    out = []
    for batch in batches or [None]:
        for index in range(sets):
            suffix = (f".b{batch}" if batch is not None else "") + (f".s{index}" if sets > 1 else "")
            inputs = base.inputs
            if batch is not None:
                inputs = tuple(replace(i, shape=(batch, *i.shape[1:]) if i.shape else i.shape) for i in inputs)
            name = base.name + suffix
            if len(name) > MAX_MODEL_NAME:
                r.fail(r.key("name"), f"case name `{name}` is longer than {MAX_MODEL_NAME} characters")
            out.append(replace(base, name=name, inputs=inputs, seed=base.seed + index))
    return out


def _check_ref(r: _Reader, key: str, ref: str) -> None:
    module, sep, attr = ref.partition(":")
    ident = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
    if not sep or not ident.match(module) or not ident.match(attr):
        r.fail(r.key(key), f"`{ref}` is not of the form `package.module:callable`")


def _parse_input(r: _Reader) -> InputSpec:
    r.check_keys(("name", "shape", "dtype", "low", "high"))
    name = r.get("name", (str,), required=True)
    shape = r.get("shape", (list,), required=True)
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        r.fail(r.key("shape"), f"expected an array of non-negative integers, got {shape!r}")
    dtype = r.get("dtype", (str,), "float32")
    if dtype not in DTYPES:
        r.fail(r.key("dtype"), f"unsupported dtype `{dtype}` (supported: {', '.join(DTYPES)})")
    low = r.get("low", (int, float), None)
    high = r.get("high", (int, float), None)
    if low is not None and high is not None and not low < high:
        r.fail(r.key("high"), f"must be greater than low ({low})")
    return InputSpec(name=name, shape=tuple(shape), dtype=dtype, low=low, high=high)
