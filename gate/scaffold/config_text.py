"""The ``[tool.parity-gate]`` section ``init`` writes, from a factory and input shapes; checked by the
config parser before anything is written, so ``init`` never leaves a config ``check`` would refuse."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gate.config import DTYPES
from gate.config.parse import parse
from gate.core.names import model_name_problem
from gate.core.refs import is_ref
from gate.core.target import REFERENCE_PROVIDER
from gate.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_PROVIDERS = (REFERENCE_PROVIDER, "CPUExecutionProvider")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_INPUT = re.compile(r"(?:(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)=)?(?P<shape>\d+(?:[x*]\d+)*|\d+(?:,\d+)*)"
                    r"(?::(?P<dtype>\w+))?"
                    rf"(?:\[(?P<low>{_NUMBER}),(?P<high>{_NUMBER})\))?\Z")
FORM = "NAME=DIMS[:DTYPE][[LOW,HIGH)]"
EXAMPLE = "x=1x3x224x224, or 'attention_mask=2x16:int64[0,2)' (quoted: the shell reads brackets)"


@dataclass(frozen=True)
class Input:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    low: float | int | None = None  # values drawn from [low, high) (the config's `low` and `high`)
    high: float | int | None = None


def parse_input(text: str, index: int = 0) -> Input:
    """``x=1x3x224x224:float32``, ``1,3,224,224`` (named ``x``, ``x1``, ...), dtype optional, and a
    half-open value range after it: ``attention_mask=2x16:int64[0,2)``."""
    found = _INPUT.match(text.strip().replace(" ", ""))
    if not found and re.search(r"\[[^\]]*\]\s*\Z", text):
        raise ConfigError(f"input `{text}`: write the range half-open, [LOW,HIGH): HIGH itself is never drawn")
    if not found:
        raise ConfigError(f"input `{text}`: expected {FORM}, e.g. {EXAMPLE}")
    dtype = found["dtype"] or "float32"
    if dtype not in DTYPES:
        raise ConfigError(f"input `{text}`: dtype `{dtype}` is not one of {', '.join(DTYPES)}")
    shape = tuple(int(d) for d in re.split(r"[x,*]", found["shape"]))
    low, high = _range(text, dtype, found["low"], found["high"])
    return Input(found["name"] or ("x" if index == 0 else f"x{index}"), shape, dtype, low, high)


def _range(text: str, dtype: str, low: str | None, high: str | None) -> tuple[float | int | None, float | int | None]:
    if low is None:
        return None, None
    assert high is not None  # the pattern takes both ends or neither
    if dtype == "bool":
        raise ConfigError(f"input `{text}`: a bool input takes no range (its values are 0 and 1)")
    floating = dtype.startswith(("float", "bfloat"))
    try:
        lo, hi = (float(low), float(high)) if floating else (int(low), int(high))
    except ValueError:
        raise ConfigError(f"input `{text}`: an {dtype} input's range takes integers, e.g. [0,2)") from None
    if not lo < hi:
        raise ConfigError(f"input `{text}`: the range [{low},{high}) is empty: HIGH must be greater than LOW")
    return lo, hi


Inputs = Sequence[Input] | str  # declared inputs, or a module:function that makes them


def model_name(factory: str) -> str:
    """A model name from the factory's callable: ``models.vision:ResNet18`` -> ``resnet18``."""
    fn = factory.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    return (re.sub(r"[^a-z0-9._-]+", "-", fn.lower()).strip("-._") or "model")[:64]


def _checked(name: str, factory: str, inputs: Inputs) -> None:
    problem = model_name_problem(name)
    if problem:
        raise ConfigError(f"model name `{name}` {problem}; pass --name")
    if not is_ref(factory):
        raise ConfigError(f"factory `{factory}`: expected module:callable, e.g. models.vision:resnet18")
    if isinstance(inputs, str) and not is_ref(inputs):
        raise ConfigError(f"inputs `{inputs}`: expected module:function (called with the seed, returning a tuple "
                          "of tensors), e.g. models.data:sample_inputs")
    if not inputs:
        raise ConfigError("give at least one input shape, e.g. --input x=1x3x224x224 (or --inputs module:function)")


def model_table(name: str, factory: str, inputs: Inputs, section: str | None = "tool.parity-gate") -> str:
    """One ``[[models]]`` table (under ``section``; None: at the top level of parity-gate.toml)."""
    _checked(name, factory, inputs)
    if isinstance(inputs, str):  # module:function(seed) -> tuple of tensors
        shown = f"{json.dumps(inputs)}                # callable(seed: int) -> tuple of tensors"
    else:
        shown = "[" + ", ".join(_input_table(i) for i in inputs) + "]"
    return (f"[[{section + '.' if section else ''}models]]\n"
            f"name = {json.dumps(name)}\n"
            f"factory = {json.dumps(factory)}                # zero-argument callable -> torch.nn.Module\n"
            f"inputs = {shown}\n")


def _input_table(i: Input) -> str:
    bounds = "" if i.low is None else f", low = {json.dumps(i.low)}, high = {json.dumps(i.high)}"
    return (f'{{ name = {json.dumps(i.name)}, shape = [{", ".join(map(str, i.shape))}], '
            f'dtype = {json.dumps(i.dtype)}{bounds} }}')


def section(name: str, factory: str, inputs: Inputs, providers: Sequence[str] = DEFAULT_PROVIDERS) -> str:
    """The TOML text; raises ConfigError (naming the key) if ``check`` would refuse it."""
    text = ("[tool.parity-gate]\n"
            'baseline-dir = "baselines"                       # relative to this file\'s folder; commit it\n'
            f"providers = [{', '.join(json.dumps(p) for p in providers)}]\n\n"
            + model_table(name, factory, inputs))
    parse(tomllib.loads(text)["tool"]["parity-gate"], Path("parity-gate.toml"), "tool.parity-gate")
    return text


def has_section(pyproject_text: str) -> bool:
    return "parity-gate" in tomllib.loads(pyproject_text).get("tool", {})
