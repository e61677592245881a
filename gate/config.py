"""Load and validate ``[tool.parity-gate]`` configuration.

Every error names the file and the dotted key, so a user can fix it without reading
code. Nothing here imports torch: factories are resolved later, by ``gate.model``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gate.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

MODEL_NAME = re.compile(r"^[a-z0-9._-]{1,128}$")
DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool")
EXPORTERS = ("dynamo", "torchscript")

# Short aliases users may type; reports always use the canonical names.
PROVIDER_ALIASES = {
    "cpu": "CPUExecutionProvider",
    "ort-cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "ort-cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "trt": "TensorrtExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "rocm": "ROCMExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "dml": "DmlExecutionProvider",
}
TORCH_PROVIDERS = ("torch-cpu", "torch-cuda", "torch-compile", "torch-compile-cuda")
PRECISIONS = ("float32", "float16", "bfloat16")

# Defaults per runtime precision: half-precision rounding (~1e-3 / ~8e-3 per op) needs its own budget.
PRECISION_TOLERANCE = {
    "float16": {"floor": 1e-3, "ceiling": 5e-2},
    "bfloat16": {"floor": 1e-2, "ceiling": 2e-1},
}


def canonical_provider(name: str) -> str:
    """The canonical provider name for ``name`` (aliases and case of aliases folded)."""
    if name in TORCH_PROVIDERS or name.endswith("ExecutionProvider"):
        return name
    alias = PROVIDER_ALIASES.get(name.lower())
    if alias is None:
        known = ", ".join(sorted(set(TORCH_PROVIDERS) | set(PROVIDER_ALIASES)))
        raise ConfigError(
            f"unknown provider `{name}`: use `torch-cpu`, `torch-cuda`, an ONNX Runtime EP name "
            f"(e.g. `CPUExecutionProvider`) or an alias ({known})"
        )
    return alias


@dataclass(frozen=True)
class Tolerance:
    """Thresholds of the checks (see README, "Verdict").

    growth, floor: a runtime passes a layer while err <= growth * err_baseline + floor,
    where err is its relative L2 error against the float64 reference.
    reference: largest relative L2 change of the reference itself (a model change).
    ceiling: largest error a runtime may ever have, baseline or not.
    """

    growth: float = 2.0
    floor: float = 1e-6
    reference: float = 1e-9
    ceiling: float = 1e-2

    def merged(self, overrides: Mapping[str, float]) -> Tolerance:
        return replace(self, **dict(overrides))


@dataclass(frozen=True)
class LayerTolerance:
    pattern: str  # fnmatch glob over layer names
    overrides: Mapping[str, float]


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    # torch providers run the model in this dtype; for an EP it labels what its options select
    # (e.g. TensorRT's trt_fp16_enable): the precision's default tolerances and baseline entry.
    precision: str = "float32"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    factory: str
    inputs: tuple[InputSpec, ...] | str  # declared specs, or "module:callable"(seed) -> tuple of tensors
    exporter: str = "dynamo"
    opset: int | None = None
    seed: int = 0
    tolerance: Tolerance = Tolerance()
    layer_tolerances: tuple[LayerTolerance, ...] = ()
    where: str = ""  # "tool.parity-gate.models[0]" for messages

    def tolerance_for(self, layer: str, precision: str = "float32") -> Tolerance:
        from fnmatch import fnmatchcase

        tol = self.tolerance
        if precision in PRECISION_TOLERANCE:
            tol = tol.merged({k: max(v, getattr(tol, k)) for k, v in PRECISION_TOLERANCE[precision].items()})
        for rule in self.layer_tolerances:  # later rules win
            if fnmatchcase(layer, rule.pattern):
                tol = tol.merged(rule.overrides)
        return tol


@dataclass(frozen=True)
class Isolation:
    """How ONNX Runtime providers run: each in a worker process with a timeout and budgets."""

    enabled: bool = True
    timeout_s: float = 600.0
    memory_mb: int | None = None  # address-space budget of the worker; None: unlimited
    capture_mb: int | None = 2048  # marked intermediates held at once; larger models run in chunks


@dataclass(frozen=True)
class Config:
    path: Path
    root: Path  # the config file's folder; put on sys.path for factories
    baseline_dir: Path
    providers: tuple[ProviderSpec, ...]
    models: tuple[ModelSpec, ...]
    isolation: Isolation = Isolation()
    placement: str = "warn"  # a PR adds CPU fallbacks to an EP: "warn", "fail" or "off"
    max_slowdown: float | None = None  # fail when latency > (1 + this) x baseline; None: report only
    require: tuple[str, ...] = ()  # providers that must be available here (skipping them fails)

    def select_models(self, names: list[str] | None) -> tuple[ModelSpec, ...]:
        if not names:
            return self.models
        known = {m.name: m for m in self.models}
        missing = [n for n in names if n not in known]
        if missing:
            raise ConfigError(
                f"{self.path}: no model named `{missing[0]}` (configured: {', '.join(known) or 'none'})"
            )
        return tuple(known[n] for n in names)

    def select_providers(self, names: list[str] | None) -> tuple[ProviderSpec, ...]:
        if not names:
            return self.providers
        by_name = {p.name: p for p in self.providers}
        chosen = []
        for raw in names:
            name = canonical_provider(raw)
            chosen.append(by_name.get(name, ProviderSpec(name)))
        return tuple(chosen)


def find_config(explicit: Path | None, cwd: Path | None = None) -> Path:
    """The config file: ``explicit``, else ./pyproject.toml with [tool.parity-gate], else ./parity-gate.toml."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"config file `{explicit}` does not exist")
        return explicit
    cwd = cwd or Path.cwd()
    pyproject = cwd / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{pyproject}: invalid TOML ({exc})") from None
        if "parity-gate" in data.get("tool", {}):
            return pyproject
    standalone = cwd / "parity-gate.toml"
    if standalone.is_file():
        return standalone
    raise ConfigError(
        f"no configuration found in {cwd}: add a [tool.parity-gate] section to pyproject.toml "
        "or create parity-gate.toml (see README), or pass --config PATH"
    )


def load_config(path: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file `{path}` does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc})") from None
    if path.name == "pyproject.toml":
        section = data.get("tool", {}).get("parity-gate")
        prefix = "tool.parity-gate"
        if section is None:
            raise ConfigError(f"{path}: no [tool.parity-gate] section")
    else:
        # parity-gate.toml may use the same [tool.parity-gate] table or put the keys at top level.
        section = data.get("tool", {}).get("parity-gate", data)
        prefix = "tool.parity-gate" if "tool" in data else ""
    return _parse(section, path, prefix)


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
MODEL_KEYS = ("name", "factory", "inputs", "exporter", "opset", "seed", "tolerance", "layer-tolerances")
TOLERANCE_KEYS = ("growth", "floor", "reference", "ceiling")


def _parse(section: Any, path: Path, prefix: str) -> Config:
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
        models.append(_parse_model(_Reader(raw, path, f"{top.key('models')}[{i}]"), default_tol, seed, opset, exporter))
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
            r.check_keys(("name", "options", "precision"))
            name = _canonical(top, r.key("name"), r.get("name", (str,), required=True))
            precision = r.get("precision", (str,), "float32")
            if precision not in PRECISIONS:
                r.fail(r.key("precision"), f"expected one of {', '.join(PRECISIONS)}, got `{precision}`")
            spec = ProviderSpec(name, dict(r.get("options", (dict,), {})), precision)
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


def _parse_model(r: _Reader, default_tol: Tolerance, seed: int, opset: int | None, exporter: str) -> ModelSpec:
    r.check_keys(MODEL_KEYS)
    name = r.get("name", (str,), required=True)
    if not MODEL_NAME.match(name) or name in (".", ".."):
        r.fail(r.key("name"), f"`{name}` is not a valid model name (use 1-128 of a-z 0-9 . _ -)")
    factory = r.get("factory", (str,), required=True)
    _check_ref(r, "factory", factory)
    inputs_raw = r.get("inputs", (list, str), required=True)
    if isinstance(inputs_raw, str):
        _check_ref(r, "inputs", inputs_raw)
        inputs: tuple[InputSpec, ...] | str = inputs_raw
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
    return ModelSpec(name=name, factory=factory, inputs=inputs, exporter=exp, opset=model_opset,
                     seed=r.get("seed", (int,), seed), tolerance=tol, layer_tolerances=tuple(layer_tols),
                     where=r.where)


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
