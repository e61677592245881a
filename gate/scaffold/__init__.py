"""``parity-gate init``: the files a repository needs to be gated, planned (``plan``: each file's text
and action), then written (``apply``, which also sets the git diff driver). Nothing a user wrote is
overwritten without ``force``, and nothing configured is dropped: an existing config, the workflows'
requirements and approval, the constraints' pins are kept.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

from gate.config.shards import MAX_SHARDS
from gate.core.files import CONSTRAINTS
from gate.errors import ConfigError
from gate.scaffold import codeowners
from gate.scaffold.add import merge_constraints, merge_pip_args, pip_args_of
from gate.scaffold.approval import requires_approval, with_approval
from gate.scaffold.config_text import DEFAULT_PROVIDERS, Inputs, has_section, model_name, parse_input, section
from gate.scaffold.deps import constraints, model_requirements
from gate.scaffold.diff_driver import attributes_line, install, top_level
from gate.scaffold.workflows import (
    ACTION,
    FLOWS,
    FORK_ENVIRONMENT,
    GPU_BASELINES,
    RUN_GPU_BASELINES,
    SHARDED_FLOWS,
    Flow,
    runner_labels,
    workflows,
)

BUILTIN_LABELS = {"self-hosted", "linux", "macos", "windows", "x64", "arm", "arm64"}  # GitHub's own runner labels


@dataclass(frozen=True)
class Options:
    root: Path
    factory: str
    inputs: Inputs  # declared, or a module:function that makes them
    name: str | None = None
    flow: str = "single"
    providers: tuple[str, ...] = DEFAULT_PROVIDERS
    action: str = ACTION
    pip_args: str | None = None  # None: detected (requirements.txt, or what the factory imports)
    require_approval: bool = False
    gpu_runner: str = "self-hosted, linux, x64, gpu"
    force: bool = False
    shards: int = 0  # the check as a matrix of this many legs, one verdict (single and fork flows)


def default_branch(root: Path) -> str:
    """The repository's default branch as git knows it: origin's HEAD, else the branch checked out
    when it is main or master (a feature branch is no default), else main."""
    for args, accept in ((["symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"], None),
                         (["symbolic-ref", "--quiet", "--short", "HEAD"], ("main", "master"))):
        try:
            proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return "main"
        name = proc.stdout.strip().removeprefix("origin/") if proc.returncode == 0 else ""
        if name and (accept is None or name in accept):
            return name
    return "main"


@dataclass
class Change:
    path: str  # relative to the root
    action: str  # create | append | edit | replace | keep
    text: str = ""
    why: str = ""


@dataclass
class Plan:
    options: Options
    model: str
    changes: list[Change] = field(default_factory=list)
    pip_args: str = ""
    providers: tuple[str, ...] = ()  # what the config gates

    @property
    def config_path(self) -> Path:
        chosen = next(c for c in self.changes if c.path in ("pyproject.toml", "parity-gate.toml"))
        return self.options.root / chosen.path


def _file(root: Path, path: str, text: str, force: bool) -> Change:
    target = root / path
    if not target.exists():
        return Change(path, "create", text)
    if target.read_text(encoding="utf-8") == text:
        return Change(path, "keep", why="already as init writes it")
    if force:
        return Change(path, "replace", text)
    return Change(path, "keep", why="exists; --force replaces it")


def _config(root: Path, text: str) -> Change:
    """A new config, or the section appended to a pyproject.toml without one; an existing one is kept
    whole, ``--force`` or not (its other models, inputs and keys are the user's)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.exists():
        if (root / "parity-gate.toml").exists():
            return Change("parity-gate.toml", "keep", why="kept whole: `parity-gate add` adds a model to it")
        return _file(root, "parity-gate.toml", text, False)
    current = pyproject.read_text(encoding="utf-8")
    if not has_section(current):
        return Change("pyproject.toml", "append", ("\n" if current and not current.endswith("\n") else "")
                      + ("\n" if current.strip() else "") + text)
    return Change("pyproject.toml", "keep",
                  why="[tool.parity-gate] kept whole: `parity-gate add` adds a model to it")


def _workflow(root: Path, path: str, body: str, options: Options, pip_args: str) -> Change:
    """A workflow: created; replaced with ``force``; else kept, with the models' requirements it lacks
    added and, with ``require_approval``, approval turned on, in place."""
    target = root / path
    if not target.exists() or options.force:
        return _file(root, path, body, options.force)
    current = target.read_text(encoding="utf-8")
    merged = merge_pip_args(current, pip_args.split())
    edited = with_approval(merged) if options.require_approval else merged
    if edited == current:
        return _file(root, path, body, False)
    approval = "baseline changes need approval: a label or a review runs the gate again"
    why = (["the models' requirements added"] if merged != current else []) + ([approval] if edited != merged else [])
    return Change(path, "edit", edited, why="; ".join(why) + "; the rest as it was")


def _constraints(root: Path, extra: list[str], force: bool) -> Change:
    """The pins: created; an existing file keeps every pin, and gains pins for packages it lacks."""
    target = root / CONSTRAINTS
    if not target.exists():
        return _file(root, CONSTRAINTS, constraints(extra), force)
    current = target.read_text(encoding="utf-8")
    merged = merge_constraints(current, extra)
    if merged == current:
        return Change(CONSTRAINTS, "keep", why="kept every pin")
    return Change(CONSTRAINTS, "append", merged[len(current):] if merged.startswith(current) else merged,
                  why="kept every pin")


def _gitattributes(root: Path) -> Change:
    target = root / ".gitattributes"
    current = target.read_text(encoding="utf-8") if target.exists() else ""
    added = attributes_line(current)
    if not added:
        return Change(".gitattributes", "keep", why="has the diff driver line")
    return Change(".gitattributes", "append" if current else "create", added)


def _pip_args(options: Options) -> str:
    """The models' requirements: given, or requirements.txt, or what the factory imports, added to what
    the repository's workflows install already (every configured model's)."""
    if options.pip_args is not None:
        wanted = options.pip_args
    elif (options.root / "requirements.txt").is_file():
        wanted = "-r requirements.txt"
    else:
        wanted = " ".join(model_requirements(options.factory, options.root))
    return pip_args_of(options.root, wanted.split())


def plan(options: Options) -> Plan:
    """Every file ``init`` would write, and how; raises ConfigError before anything is written."""
    if options.flow not in FLOWS:
        raise ConfigError(f"flow `{options.flow}`: expected one of {', '.join(FLOWS)}")
    if options.shards > 1 and options.flow not in SHARDED_FLOWS:
        raise ConfigError(f"--shards {options.shards}: the {options.flow} flow exports once and collects per runner; "
                          f"a sharded check is written for the {' and '.join(SHARDED_FLOWS)} flows")
    if not 0 <= options.shards <= MAX_SHARDS:
        raise ConfigError(f"--shards {options.shards}: expected 2 to {MAX_SHARDS} legs (or 1: one job, no matrix)")
    name = options.name or model_name(options.factory)
    providers = options.providers + (("CUDAExecutionProvider",) if options.flow == "gpu" and
                                     "CUDAExecutionProvider" not in options.providers else ())
    text = section(name, options.factory, options.inputs, providers)
    out = Plan(options, name, pip_args=_pip_args(options), providers=providers)
    out.changes.append(_config(options.root, text))
    approval = options.require_approval or _approving(options.root)  # --force never turns approval off
    flow = Flow(options.flow, options.action, out.pip_args, approval, options.gpu_runner,
                shards=options.shards if options.shards > 1 else 0, default_branch=default_branch(options.root))
    for path, body in workflows(flow).items():
        change = _workflow(options.root, path, body, replace(options, require_approval=approval),
                           out.pip_args)
        if path == GPU_BASELINES and change.action != "keep":
            change.why = f"after the first push: {RUN_GPU_BASELINES} records the GPU baselines"
        elif options.flow == "gpu" and change.action != "keep":
            # GitHub creates a missing environment without reviewers: then nothing would hold a fork's run.
            change.why = (f"before the first pull request: environment {FORK_ENVIRONMENT} with required reviewers, "
                          "and the GPU runner ephemeral, in a runner group that admits only this workflow "
                          "(docs/action.md)")
        out.changes.append(change)
    labels = [x for x in runner_labels(flow) if x not in BUILTIN_LABELS] if options.flow == "gpu" else []
    if labels:  # actionlint (and editors using it) must know the self-hosted runner's own labels
        out.changes.append(_file(options.root, ".github/actionlint.yaml", "self-hosted-runner:\n  labels:\n"
                                 + "".join(f"    - {label}\n" for label in labels), False))
    out.changes.append(_gitattributes(options.root))
    extra = [a for a in out.pip_args.split() if not a.startswith("-") and "/" not in a and a != "requirements.txt"]
    out.changes.append(_constraints(options.root, extra, options.force))
    decides = (".github/", out.changes[0].path, CONSTRAINTS, "baselines/")
    out.changes.append(Change(codeowners.PATH, *codeowners.entry(options.root, decides)))
    return out


def _approving(root: Path) -> bool:
    folder = root / ".github" / "workflows"
    return folder.is_dir() and any(requires_approval(p.read_text(encoding="utf-8"))
                                   for p in folder.glob("*.y*ml"))


def apply(p: Plan) -> list[str]:
    """Write the planned files; set the git diff driver in the repository's local config.
    Returns what was done to git, for the log."""
    for c in p.changes:
        target = p.options.root / c.path
        if c.action in ("create", "replace", "edit"):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(c.text, encoding="utf-8")
        elif c.action == "append":
            with target.open("a", encoding="utf-8") as f:
                f.write(c.text)
    return install(p.options.root)


def at_top_level(root: Path) -> None:
    """ConfigError where ``root`` is a subfolder of a git clone: GitHub reads workflows only at its top."""
    top, here = top_level(root), root.resolve()
    if top is not None and top != here:
        raise ConfigError(f"init writes .github/workflows, which GitHub reads only at the repository's top "
                          f"level: run it in {top} (or pass --dir {top}), naming the factory as it imports "
                          f"from there; a config in {here.relative_to(top)}/ takes a workflow of your own "
                          "with the action's working-directory (docs/action.md)")


def uncommitted(root: Path, paths: list[str]) -> list[str]:
    """Those of ``paths`` (relative to ``root``; a folder stands for its files) that exist and that git
    does not hold as they are (untracked, or changed since the last commit): what a commit must add.
    Every one that exists where git cannot tell."""
    there = sorted({p for p in paths if (root / p).exists()})
    listed = set()
    untracked = ["ls-files", "--others", "--exclude-standard"]
    for args in (untracked, ["diff", "--name-only", "--relative", "HEAD"]):
        try:
            proc = subprocess.run(["git", *args, "-z", "--", *there], cwd=root, capture_output=True,
                                  text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return there
        if proc.returncode != 0:  # not a clone, or nothing committed yet
            return there
        listed.update(proc.stdout.split("\0"))
    return [p for p in there if any(f == p or f.startswith(f"{p}/") for f in listed)]


__all__ = ["CONSTRAINTS", "Change", "Options", "Plan", "apply", "at_top_level", "parse_input", "plan",
           "uncommitted"]
