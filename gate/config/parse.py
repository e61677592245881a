"""Parse and validate the ``[tool.parity-gate]`` table into ``gate.config.types``.

Every error names the file and the dotted key (``tool.parity-gate.models[0].inputs[0].shape``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from gate.config.models import parse_model, parse_tolerance
from gate.config.providers import canonical_provider
from gate.config.reader import DISK, Files, Reader, kind
from gate.config.sweeps import included, parse_sweep
from gate.config.types import EXPORTERS, Config, Isolation, ProviderSpec, Sweep, Tolerance
from gate.core.target import PRECISIONS, REFERENCE_PROVIDER, TORCH_PRECISIONS
from gate.errors import ConfigError

TOP_KEYS = ("baseline-dir", "providers", "models", "tolerance", "seed", "opset", "exporter", "isolation",
            "placement", "max-slowdown", "require", "allow-missing-gpu", "sweeps", "include")
ISOLATION_KEYS = ("enabled", "timeout", "memory-budget-mb", "capture-memory-mb")


def parse(section: Any, path: Path, prefix: str, files: Files = DISK) -> Config:
    top = Reader(section, path, prefix, files=files)
    top.check_keys(TOP_KEYS)
    root = files.resolve(path).parent
    baseline_dir = root / top.get("baseline-dir", (str,), "baselines")
    providers = _parse_providers(top)
    default_tol = parse_tolerance(top, "tolerance", Tolerance())
    seed = top.seed(0)
    opset = top.get("opset", (int,), None)
    exporter = top.choice("exporter", EXPORTERS, "dynamo")
    models = []
    for i, raw in enumerate(top.get("models", (list,), [])):
        models.extend(parse_model(top.child(raw, top.item("models", i)), default_tol, seed, opset, exporter))
    sweep_tables = [top.child(t, top.item("sweeps", i)) for i, t in enumerate(top.get("sweeps", (list,), []))]
    sweeps: list[Sweep] = []
    for r in sweep_tables + included(top):
        sweep, cases = parse_sweep(r, default_tol, seed, opset, exporter)
        if sweep.anchor is not None:
            sweep = replace(sweep, anchor=_canonical(r, r.key("anchor"), sweep.anchor))
            if sweep.anchor not in {p.name for p in providers}:
                r.fail(r.key("anchor"), f"`{sweep.anchor}` is not a configured provider")
        if any(s.name == sweep.name for s in sweeps):
            r.fail(r.key("name"), f"sweep name `{sweep.name}` is used twice")
        sweeps.append(sweep)
        models.extend(cases)
    if not models:
        top.fail(top.key("models"), "no models or sweeps configured")
    seen: set[str] = set()
    clash = {s.name for s in sweeps} & {m.name for m in models if m.sweep is None}
    if clash:  # both would be baselines/<name>.msgpack.zst
        top.fail(top.key("sweeps"), f"sweep `{sorted(clash)[0]}` has the name of a model")
    for m in models:
        if m.name in seen:
            top.fail(top.key("sweeps" if m.sweep else "models"), f"model name `{m.name}` is used twice")
        seen.add(m.name)
    placement = top.get("placement", (str,), "warn")
    if placement not in ("warn", "fail", "off"):
        top.fail(top.key("placement"), f"expected warn, fail or off, got `{placement}`")
    slowdown = top.at_least("max-slowdown", (int, float), 0)
    require = tuple(_canonical(top, top.key("require"), n) for n in top.get("require", (list,), []))
    allow_missing_gpu = top.get("allow-missing-gpu", (bool,), False)
    return Config(path=path, root=root, baseline_dir=baseline_dir, providers=providers, models=tuple(models),
                  isolation=_parse_isolation(top), placement=placement,
                  max_slowdown=None if slowdown is None else float(slowdown), require=require,
                  allow_missing_gpu=allow_missing_gpu, sweeps=tuple(sweeps))


def _parse_isolation(top: Reader) -> Isolation:
    raw = top.get("isolation", (dict,), None)
    if raw is None:
        return Isolation()
    r = top.child(raw, top.key("isolation"))
    r.check_keys(ISOLATION_KEYS)
    values = {}
    for key, field_name, kinds in (("enabled", "enabled", (bool,)), ("timeout", "timeout_s", (int, float)),
                                   ("memory-budget-mb", "memory_mb", (int,)),
                                   ("capture-memory-mb", "capture_mb", (int,))):
        value = r.get(key, kinds, None)
        if value is None:
            continue
        if not isinstance(value, bool) and not value > 0:  # NaN too
            r.fail(r.key(key), f"must be > 0, got {value}")
        values[field_name] = value
    return Isolation(**values)


def _parse_providers(top: Reader) -> tuple[ProviderSpec, ...]:
    raw = top.get("providers", (list,), [REFERENCE_PROVIDER, "CPUExecutionProvider"])
    out: list[ProviderSpec] = []
    for i, item in enumerate(raw):
        key = top.item("providers", i)
        if isinstance(item, str):
            spec = ProviderSpec(_canonical(top, key, item))
        elif isinstance(item, dict):
            r = top.child(item, key)
            r.check_keys(("name", "options", "precision", "isolated", "session-options"))
            name = _canonical(top, r.key("name"), r.get("name", (str,), required=True))
            allowed = PRECISIONS if name.endswith("ExecutionProvider") else TORCH_PRECISIONS
            precision = r.choice("precision", allowed, "float32")
            spec = ProviderSpec(name, dict(r.get("options", (dict,), {})), precision,
                                r.get("isolated", (bool,), None), _session_options(r, name))
        else:
            top.fail(key, f"expected a provider name or a table, got {kind(item)}")
        if any((p.name, p.precision) == (spec.name, spec.precision) for p in out):
            top.fail(key, f"provider `{spec.name}` is listed twice")
        out.append(spec)
    if not out:
        top.fail(top.key("providers"), "no providers configured")
    return tuple(out)


SESSION_KEYS = ("graph-optimization-level", "execution-mode", "intra-op-threads", "inter-op-threads",
                "free-dimension-overrides", "config-entries")
CHOICES = {"graph-optimization-level": ("disable", "basic", "extended", "all"),
           "execution-mode": ("sequential", "parallel")}


def _session_options(r: Reader, name: str) -> dict[str, Any]:
    """ONNX Runtime ``SessionOptions`` for every session of this provider (recorded in the baseline)."""
    raw = r.get("session-options", (dict,), None)
    if raw is None:
        return {}
    if not name.endswith("ExecutionProvider"):
        r.fail(r.key("session-options"), f"applies to ONNX Runtime providers, not `{name}`")
    t = r.child(raw, r.key("session-options"))
    t.check_keys(SESSION_KEYS)
    out: dict[str, Any] = {}
    for key, choices in CHOICES.items():
        value = t.choice(key, choices)
        if value is not None:
            out[key] = value
    for key in ("intra-op-threads", "inter-op-threads"):
        value = t.at_least(key, (int,), 1)
        if value is not None:
            out[key] = value
    for key, kinds in (("free-dimension-overrides", (int,)), ("config-entries", (str,))):
        table = t.get(key, (dict,), None)
        if table is None:
            continue
        sub = t.child(table, t.key(key))
        out[key] = {k: sub.get(k, kinds) for k in sub.table}
        if key == "free-dimension-overrides" and any(v < 1 for v in out[key].values()):
            sub.fail(sub.key(next(k for k, v in out[key].items() if v < 1)), "must be >= 1")
    return out


def _canonical(top: Reader, key: str, name: str) -> str:
    try:
        return canonical_provider(name)
    except ConfigError as exc:
        top.fail(key, str(exc))
        raise  # unreachable


