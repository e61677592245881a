"""``[[tool.parity-gate.sweeps]]``: operators and modules swept declaratively (opdiff's tables): a
``module`` (a class) or an ``op`` (a function), templated with ``{var}``; ``vars`` and ``dims`` expand
into cases (their product, restricted by ``cases``), each a small model that runs through the whole
gate; ``include = ["sweeps/*.toml"]`` splits large suites.
"""

from __future__ import annotations

import itertools
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from gate.config.models import bounds, parse_tolerance
from gate.config.reader import Reader, kind
from gate.config.types import DTYPES, InputSpec, ModelSpec, Pair, Skip, Sweep, SweepCase, Tolerance
from gate.core.names import MAX_MODEL_NAME, model_name_problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SWEEP_KEYS = ("name", "module", "op", "vars", "dims", "args", "kwargs", "inputs", "cases", "skip", "pair", "anchor",
              "repeats", "gradients", "tolerance", "seed")
_TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def substitute(value: Any, values: dict[str, Any]) -> Any:
    """``{var}`` in strings (recursively): a string that is only ``{var}`` takes the value itself."""
    if isinstance(value, str):
        whole = _TEMPLATE.fullmatch(value)
        if whole and whole.group(1) in values:
            return values[whole.group(1)]
        return _TEMPLATE.sub(lambda m: str(values.get(m.group(1), m.group(0))), value)
    if isinstance(value, list):
        return [substitute(v, values) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, values) for k, v in value.items()}
    return value


def _axis(r: Reader, key: str) -> dict[str, list[Any]]:
    table = r.get(key, (dict,), {})
    out: dict[str, list[Any]] = {}
    for name, values in table.items():
        values = values if isinstance(values, list) else [values]
        if not values or any(isinstance(v, dict) for v in values):
            r.fail(f"{r.key(key)}.{name}", f"expected a value or an array of values, got {values!r}")
        out[name] = values
    return out


def _inputs(r: Reader, axes: dict[str, list[Any]]) -> list[dict[str, Any]]:
    raw: list[dict[str, Any]] = r.get("inputs", (list,), required=True)
    if not raw:
        r.fail(r.key("inputs"), "no inputs declared")
    for i, spec in enumerate(raw):
        t = r.child(spec, r.item("inputs", i))
        t.check_keys(("name", "shape", "dtype", "low", "high"))
        t.get("name", (str,), required=True)
        for d in t.get("shape", (list,), required=True):
            named = isinstance(d, str) and (d in axes or _TEMPLATE.fullmatch(d))
            if not named and not (isinstance(d, int) and not isinstance(d, bool) and d >= 0):
                t.fail(t.key("shape"), f"`{d}` is neither a size nor a name of `dims`/`vars` ({', '.join(axes)})")
        dtype = t.get("dtype", (str,), "float32")
        if dtype not in DTYPES and not _TEMPLATE.search(dtype):
            t.fail(t.key("dtype"), f"unsupported dtype `{dtype}` (supported: {', '.join(DTYPES)})")
    return raw


def _shaped(r: Reader, raw: list[dict[str, Any]], values: dict[str, Any]) -> tuple[InputSpec, ...]:
    out = []
    for i, spec in enumerate(substitute(raw, values)):
        shape = tuple(values[d] if isinstance(d, str) and d in values else d for d in spec["shape"])
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            r.fail(f"{r.item('inputs', i)}.shape", f"a dimension is not a size for case {values}: {list(shape)}")
        dtype = spec.get("dtype", "float32")
        if dtype not in DTYPES:
            r.fail(f"{r.item('inputs', i)}.dtype", f"unsupported dtype `{dtype}` (supported: {', '.join(DTYPES)})")
        low, high = bounds(r.child(spec, r.item("inputs", i)), dtype)
        out.append(InputSpec(spec["name"], shape, dtype, low, high))
    return tuple(out)


def _skips(r: Reader) -> tuple[Skip, ...]:
    out = []
    for i, raw in enumerate(r.get("skip", (list,), [])):
        t = r.child(raw, r.item("skip", i))
        t.check_keys(("case", "provider", "reason"))
        reason = t.get("reason", (str,), required=True).strip()
        if not reason:
            t.fail(t.key("reason"), "say why the case is skipped: the report lists it")
        out.append(Skip(t.get("case", (str,), "*"), t.get("provider", (str,), "*"), reason))
    return tuple(out)


def _side(t: Reader, key: str, variables: dict[str, list[Any]]) -> tuple[str, Any]:
    """``"RMSNorm"`` (a value of exactly one var) or ``{ norm = "RMSNorm" }``: (var, value)."""
    raw = t.get(key, (str, dict), required=True)
    if isinstance(raw, dict):
        if len(raw) != 1 or next(iter(raw)) not in variables:
            t.fail(t.key(key), f"expected {{ <var> = <value> }} naming one of the vars ({', '.join(variables)})")
        axis, value = next(iter(raw.items()))
    else:
        axes = [name for name, values in variables.items() if raw in values]
        if len(axes) != 1:
            t.fail(t.key(key), f"`{raw}` is " + ("not a value of any var" if not axes else
                                                  f"a value of several vars ({', '.join(axes)}); write {{ var = value }}"))
        axis, value = axes[0], raw
    if value not in variables[axis]:
        t.fail(t.key(key), f"`{value}` is not a value of var `{axis}`")
    return axis, value


def _pairs(r: Reader, variables: dict[str, list[Any]]) -> tuple[Pair, ...]:
    raw = r.get("pair", (dict, list), [])
    out = []
    for i, table in enumerate(raw if isinstance(raw, list) else [raw]):
        t = r.child(table, r.item("pair", i) if isinstance(raw, list) else r.key("pair"))
        t.check_keys(("left", "right", "tolerance"))
        (axis, left), (other, right) = _side(t, "left", variables), _side(t, "right", variables)
        if axis != other or left == right:
            t.fail(t.where, "`left` and `right` must be two values of the same var")
        tolerance = t.at_least("tolerance", (int, float), 0, 1e-5)
        out.append(Pair(axis, left, right, float(tolerance)))
    return tuple(out)


def _case_name(sweep: str, values: dict[str, Any], varying: list[str], taken: set[str]) -> str:
    parts = []
    for key in varying:
        v = values[key]
        text = f"{key.lower()}{v}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v).lower()
        parts.append(re.sub(r"[^a-z0-9_-]+", "-", text).strip("-") or "x")
    name = ".".join([sweep, *parts]) if parts else sweep
    base, k = name, 2
    while name in taken:
        name, k = f"{base}.{k}", k + 1
    return name


def _selected(r: Reader, axes: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The cartesian product of vars and dims, restricted to ``cases`` (tables of values) if given."""
    restrict = r.get("cases", (list,), None)
    for i, table in enumerate(restrict or []):
        if not isinstance(table, dict) or not set(table) <= set(axes):
            r.fail(r.item("cases", i), f"expected a table of var/dim values ({', '.join(axes)})")
    combos = [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]
    if restrict is None:
        return combos
    chosen = [c for c in combos if any(all(c[k] == v for k, v in t.items()) for t in restrict)]
    if not chosen:
        r.fail(r.key("cases"), "no case of the sweep matches `cases`")
    return chosen


def parse_sweep(r: Reader, default_tol: Tolerance, seed: int, opset: int | None,
                exporter: str) -> tuple[Sweep, list[ModelSpec]]:
    r.check_keys(SWEEP_KEYS)
    name = r.get("name", (str,), required=True)
    if model_name_problem(name) is not None:
        r.fail(r.key("name"), f"`{name}` is not a valid sweep name (use a-z 0-9 . _ -)")
    r.owner = f"sweep `{name}`"
    target_kind = next((k for k in ("module", "op") if k in r.table), None)
    if target_kind is None or ("module" in r.table and "op" in r.table):
        r.fail(r.where, "a sweep names exactly one of `module` or `op`")
    target = r.get(target_kind, (str,), required=True)
    variables, dims = _axis(r, "vars"), _axis(r, "dims")
    if set(variables) & set(dims):
        r.fail(r.key("dims"), f"`{sorted(set(variables) & set(dims))[0]}` is both a var and a dim")
    axes = {**variables, **dims}
    inputs = _inputs(r, axes)
    args, kwargs = r.get("args", (list,), []), r.get("kwargs", (dict,), {})
    varying = [k for k, v in axes.items() if len(v) > 1]
    repeats = r.at_least("repeats", (int,), 1, 5)
    base = ModelSpec(name=name, factory=f"sweep:{target}", inputs=(), seed=r.seed(seed),
                     tolerance=parse_tolerance(r, "tolerance", default_tol), where=r.where, opset=opset,
                     exporter=exporter, gradients=r.get("gradients", (bool,), False), repeats=repeats)
    specs: list[ModelSpec] = []
    taken: set[str] = set()
    for values in _selected(r, axes):
        case = _case_name(name, values, varying, taken)
        if len(case) > MAX_MODEL_NAME:
            r.fail(r.key("name"), f"case name `{case}` is longer than {MAX_MODEL_NAME} characters")
        taken.add(case)
        built = SweepCase(name, target_kind, substitute(target, values), tuple(substitute(args, values)),
                          substitute(kwargs, values), tuple(values.items()))
        specs.append(replace(base, name=case, inputs=_shaped(r, inputs, values), base=case, sweep=built,
                             case=tuple((k, values[k]) for k in varying)))
    sweep = Sweep(name, tuple(s.name for s in specs), _skips(r), _pairs(r, variables), r.get("anchor", (str,), None),
                  r.where)
    return sweep, specs


def included(top: Reader) -> list[Reader]:
    """Sweep tables from ``include = ["sweeps/*.toml"]`` (each file's ``[[sweeps]]``), in order."""
    out = []
    for pattern in top.get("include", (list,), []):
        if not isinstance(pattern, str):
            top.fail(top.key("include"), f"expected file patterns, got {kind(pattern)}")
        files = top.files.glob(str(top.files.resolve(top.path).parent / pattern))
        if not files:
            top.fail(top.key("include"), f"`{pattern}` matches no file")
        for file in files:
            try:
                data = tomllib.loads(top.files.read_text(Path(file)))
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                top.fail(top.key("include"), f"cannot read `{file}` ({exc})")
            sub = Reader(data, Path(file), "", files=top.files)
            sub.check_keys(("sweeps",))
            out += [sub.child(t, sub.item("sweeps", i)) for i, t in enumerate(sub.get("sweeps", (list,), []))]
    return out
