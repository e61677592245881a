"""``parity-gate add`` (and ``init`` on a repository already set up): one more model in the config,
its requirements merged into the workflows that install the models' and into the constraints file.
Nothing else is touched: the other models, their baselines, the rest of each file stay as they are.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gate.config import Config, find_config, load_config
from gate.errors import ConfigError
from gate.scaffold.config_text import Inputs, has_section, model_name, model_table
from gate.scaffold.deps import constraints, model_requirements

# ``extra-pip-args: "..."`` in a workflow's ``with:`` (what init writes: a JSON-quoted string).
_PIP_ARGS = re.compile(r'^(?P<head>\s*extra-pip-args:\s*)(?P<value>"(?:[^"\\]|\\.)*"|\'[^\']*\'|[^#\n]*?)\s*$', re.M)


def requirement_names(pip_args: str) -> set[str]:
    """The distributions named in ``extra-pip-args`` (options and files left out), normalized."""
    names = set()
    for token in pip_args.split():
        if token.startswith("-") or "/" in token or token.endswith(".txt"):
            continue
        names.add(re.split(r"[<>=!~;\[ @]", token, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def _value(raw: str) -> str:
    raw = raw.strip()
    if raw.startswith('"'):
        value: str = json.loads(raw)  # a quoted YAML scalar is a JSON string
        return value
    return raw.strip("'")


def merge_pip_args(text: str, wanted: list[str]) -> str:
    """``text`` (a workflow) with ``wanted`` added to the ``extra-pip-args`` of every step that runs
    the action on the models (no ``mode``, or ``check``/``export``); a step without the input gets
    it. A workflow that installs ``-r requirements.txt`` is left as it is: that file is the user's list."""
    def merged(m: re.Match[str]) -> str:
        value = _value(m.group("value"))
        if "requirements" in value:
            return m.group(0)
        have = requirement_names(value)
        extra = [w for w in wanted if w.lower().replace("_", "-") not in have]
        return m.group(0) if not extra else f"{m.group('head')}{json.dumps(' '.join([value, *extra]).strip())}"
    if not wanted:
        return text
    lines = _PIP_ARGS.sub(merged, text).splitlines(keepends=True)
    for start, end in reversed(_model_steps(lines)):
        step = lines[start:end]
        if any("extra-pip-args:" in line for line in step):
            continue
        dash = len(lines[start]) - len(lines[start].lstrip())
        with_at = next((i for i in range(start + 1, end) if lines[i].strip() == "with:"), None)
        arg = f"extra-pip-args: {json.dumps(' '.join(wanted))}\n"
        if with_at is None:
            lines[start + 1:start + 1] = [" " * (dash + 2) + "with:\n", " " * (dash + 4) + arg]
        else:
            indent = len(lines[with_at]) - len(lines[with_at].lstrip())
            lines[with_at + 1:with_at + 1] = [" " * (indent + 2) + arg]
    return "".join(lines)


_USES = re.compile(r"^(\s*)-\s+uses:\s*\S*parity-gate\S*@")
_MODE = re.compile(r"^\s*mode:\s*[\"']?([a-z-]+)")


def action_steps(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first, end, mode) line ranges of the steps that use the action, with their mode."""
    steps = []
    for i, line in enumerate(lines):
        m = _USES.match(line)
        if not m:
            continue
        dash, end = len(m.group(1)), i + 1
        while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > dash):
            end += 1
        mode = next((found.group(1) for x in lines[i + 1:end] if (found := _MODE.match(x))), "check")
        steps.append((i, end, mode))
    return steps


def _model_steps(lines: list[str]) -> list[tuple[int, int]]:
    """(first, end) line ranges of the steps that run the action on the models."""
    return [(i, end) for i, end, mode in action_steps(lines)
            if mode in ("check", "export", "update-baseline")]


def merge_constraints(text: str, wanted: list[str]) -> str:
    """The constraints file with pins for ``wanted`` packages it does not pin yet (its lines kept)."""
    pinned = {line.split("==")[0].strip().lower() for line in text.splitlines() if "==" in line}
    new = [line for line in constraints(wanted).splitlines()
           if "==" in line and line.split("==")[0].lower() in {w.lower() for w in wanted} - pinned]
    return text if not new else text.rstrip("\n") + "\n" + "\n".join(new) + "\n"


def model_workflows(root: Path) -> dict[Path, str]:
    folder = root / ".github" / "workflows"
    found = {}
    for path in sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")]) if folder.is_dir() else []:
        text = path.read_text(encoding="utf-8")
        if _model_steps(text.splitlines(keepends=True)):
            found[path] = text
    return found


def installable(root: Path) -> set[str] | None:
    """What every workflow step that runs the models installs for them (None: a requirements file,
    which may hold anything, or no such workflow to judge by)."""
    names: set[str] | None = None
    for text in model_workflows(root).values():
        lines = text.splitlines(keepends=True)
        for start, end in _model_steps(lines):
            found = _PIP_ARGS.search("".join(lines[start:end]))
            value = _value(found.group("value")) if found else ""
            if "requirements" in value:
                return None
            step = requirement_names(value)
            names = step if names is None else names & step
    return names


def pip_args_of(root: Path, wanted: list[str]) -> str:
    """What the workflows under ``root`` install for the models (the first model step's
    ``extra-pip-args``), with ``wanted`` added: what ``init`` writes again, so no model loses its
    requirements."""
    for text in model_workflows(root).values():
        lines = text.splitlines(keepends=True)
        for start, end in _model_steps(lines):
            found = _PIP_ARGS.search("".join(lines[start:end]))
            if not found:
                continue
            value = _value(found.group("value"))
            if "requirements" in value:
                return value
            if any("requirements" in w for w in wanted):
                return " ".join([value, *wanted]).strip()
            have = requirement_names(value)
            return " ".join([value, *(w for w in wanted if requirement_names(w) - have)]).strip()
    return " ".join(wanted)


def plan_add(root: Path, config: Path | None, factory: str, inputs: Inputs, name: str | None,
             pip_args: str | None) -> tuple[str, Path, dict[Path, str]]:
    """(model name, config path, {file: new text}) for adding the model; ConfigError before anything
    is written when the name is taken or the result would not load."""
    path = find_config(config, root)
    cfg = load_config(path)
    # The repository the config belongs to (found from a subfolder too): its workflows and constraints file.
    root = workflow_root(path.resolve().parent) or path.resolve().parent
    name = name or model_name(factory)
    if any(name in (m.name, m.base) for m in cfg.models):
        raise ConfigError(f"{path}: a model named `{name}` is configured already; pass --name")
    text = path.read_text(encoding="utf-8")
    under_tool = has_section(text)  # parity-gate.toml may use either form
    files = {path: text.rstrip("\n") + "\n\n" + model_table(name, factory, inputs,
                                                             "tool.parity-gate" if under_tool else None)}
    load_config(path, files[path])  # the config as it will be: refused here, before anything is written
    wanted = pip_args.split() if pip_args is not None else model_requirements(factory, cfg.root)
    for workflow, body in model_workflows(root).items():
        merged = merge_pip_args(body, wanted)
        if merged != body:
            files[workflow] = merged
    pins = root / "parity-gate-constraints.txt"
    if pins.is_file() and wanted:
        current = pins.read_text(encoding="utf-8")
        merged = merge_constraints(current, [w for w in wanted if not w.startswith("-")])
        if merged != current:
            files[pins] = merged
    return name, path, files


def write(files: dict[Path, str]) -> None:
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")


def workflow_root(start: Path) -> Path | None:
    """The nearest folder from ``start`` up that holds .github/workflows."""
    for folder in (start, *start.parents):
        if (folder / ".github" / "workflows").is_dir():
            return folder
    return None


def install_gaps(config: Config) -> list[str]:
    """One warning per model whose factory imports a package that no workflow step running the models
    installs (none when there is no such workflow, or a step installs a requirements file)."""
    root = workflow_root(config.root)
    have = installable(root) if root is not None else None
    if have is None:
        return []
    out, seen = [], set()
    for spec in config.models:
        if spec.sweep is not None or spec.factory in seen:
            continue
        seen.add(spec.factory)
        missing = [r for r in model_requirements(spec.factory, config.root) if r.lower().replace("_", "-") not in have]
        if missing:
            out.append(f"model `{spec.base or spec.name}` imports {', '.join(missing)}, which the parity-gate workflow "
                       f"does not install: add {' '.join(missing)} to its extra-pip-args (`parity-gate add` does this "
                       "for a model it adds)")
    return out
