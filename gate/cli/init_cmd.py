"""`parity-gate init`: ask for the factory and the input shapes (or take them as options), write the
config, the workflow, the diff driver and the constraints file (gate.scaffold), then run
update-baseline once. ``gate.cli.app`` calls ``register(app)``."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from gate.cli.extras import require
from gate.cli.shared import raise_failed, show_updated
from gate.config import find_config, load_config
from gate.config.providers import is_gpu
from gate.errors import GateError
from gate.render.text import count
from gate.scaffold import CONSTRAINTS, Options, Plan, apply, at_top_level, parse_input, plan, uncommitted
from gate.scaffold.config_text import Inputs, model_name
from gate.scaffold.workflows import ACTION, FLOWS, RUN_GPU_BASELINES

FactoryOpt = Annotated[str | None, typer.Option(
    "--factory", "-f", metavar="MODULE:CALLABLE", help="module:callable returning the torch.nn.Module (called with no arguments).")]
InputOpt = Annotated[list[str] | None, typer.Option(
    "--input", "-i", metavar="NAME=DIMS[:DTYPE][[LOW,HIGH)]",
    help="An input as NAME=DIMS[:DTYPE], e.g. x=1x3x224x224 (repeat for several); integers are drawn from 0..99 "
         "unless a half-open range follows, e.g. 'attention_mask=2x16:int64[0,2)' (quote it: the shell reads brackets).")]
InputsOpt = Annotated[str | None, typer.Option(
    "--inputs", metavar="MODULE:FUNCTION",
    help="Real inputs instead of --input: module:function called with the seed, returning a tuple of tensors.")]
NameOpt = Annotated[str | None, typer.Option("--name", metavar="NAME", help="Model name (default: from the factory).")]
FlowChoice = Enum("FlowChoice", {f: f for f in FLOWS}, type=str)
_MARK = {"create": "[green]created[/green] ", "append": "[green]appended[/green]",
         "edit": "[green]edited[/green]  ", "replace": "[yellow]replaced[/yellow]", "keep": "[dim]kept[/dim]    "}


def _ask(factory: str | None, inputs: list[str] | None, callable_inputs: str | None, yes: bool) -> tuple[str, Inputs]:
    """What init needs and was not given: asked on a terminal, an error elsewhere."""
    interactive = sys.stdin.isatty() and not yes
    if not factory:
        if not interactive:
            raise GateError("init: give the model with --factory module:callable (a zero-argument callable "
                            "returning the torch.nn.Module)")
        factory = typer.prompt("Model factory (module:callable returning the torch.nn.Module)")
    if callable_inputs is not None:
        if inputs:
            raise GateError("give the inputs once: --input NAME=DIMS... declares them, --inputs module:function "
                            "makes them; not both")
        return factory, callable_inputs
    if not inputs:
        if not interactive:
            raise GateError("init: give the input shapes with --input, e.g. --input x=1x3x224x224 (or real inputs "
                            "with --inputs module:function)")
        inputs = typer.prompt("Input shapes, NAME=DIMS[:DTYPE][[LOW,HIGH)], comma-free, space separated",
                              default="x=1x3x224x224").split()
    return factory, tuple(parse_input(t, i) for i, t in enumerate(inputs))


def _show(p: Plan) -> None:
    from gate.cli.console import console

    for c in p.changes:
        why = f"  ({c.why})" if c.why else ""
        console.print(f"{_MARK[c.action]} {escape(c.path)}{escape(why)}", soft_wrap=True)
    if p.pip_args:
        console.print(f"[dim]the workflow installs your model's requirements: {escape(p.pip_args)}[/dim]", soft_wrap=True)


def init(
    factory: FactoryOpt = None,
    input_: InputOpt = None,
    inputs_ref: InputsOpt = None,
    name: NameOpt = None,
    flow: Annotated[FlowChoice, typer.Option(
        "--flow", help="single: one CPU job; gpu: export, CPU and self-hosted GPU collect, one report; "
                       "fork: a read-only check and a workflow_run comment (pull requests from forks).")] = FlowChoice.single,
    provider: Annotated[list[str] | None, typer.Option(
        "--provider", "-p", help="Providers to gate (default: torch-cpu CPUExecutionProvider).")] = None,
    pip_args: Annotated[str | None, typer.Option(
        "--pip-args", help="Your models' own requirements for the workflow (default: -r requirements.txt when "
                           "it exists, else the packages the factory imports).")] = None,
    require_approval: Annotated[bool, typer.Option(
        "--require-approval", help="Fail pull requests that change baselines until a label or review allows them.")] = False,
    shards: Annotated[int, typer.Option(
        "--shards", min=1, metavar="N",
        help="Check the models in a matrix of N legs (flows single and fork), each running one shard of them "
             "(check --shard K/N); the verdict job merges their reports into one comment and one status.")] = 1,
    gpu_runner: Annotated[str, typer.Option("--gpu-runner", help="Labels of the self-hosted GPU runner (flow gpu).")]
    = "self-hosted, linux, x64, gpu",
    action: Annotated[str, typer.Option("--action", help="The action the workflows use.")] = ACTION,
    directory: Annotated[Path, typer.Option("--dir", help="The repository root.")] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Replace files and the config section init wrote before.")] = False,
    no_baseline: Annotated[bool, typer.Option("--no-baseline", help="Write the files, do not run update-baseline.")]
    = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Never prompt (CI, scripts).")] = False,
) -> None:
    """Set up a repository: config, workflow, git diff driver, constraints file, first baseline."""
    from gate.cli.console import console

    factory, inputs = _ask(factory, input_, inputs_ref, yes)
    at_top_level(directory.resolve())
    if not no_baseline:
        require("init")
        _importable(directory.resolve(), factory, inputs)
    if _adds_to_config(directory.resolve(), name, factory):
        console.print("[dim]a parity-gate config exists here: adding the model to it, every other model "
                      "kept[/dim]")
        _add_files(directory.resolve(), None, factory, inputs, name, pip_args)
    options = Options(directory.resolve(), factory, inputs, name,
                      flow.value, tuple(provider) if provider else Options.providers, action, pip_args,
                      require_approval, gpu_runner, force, shards)
    p = plan(options)
    for line in apply(p):
        console.print(f"[dim]{escape(line)}[/dim]", soft_wrap=True)
    _show(p)
    _warn_ranges(p.config_path, p.model)
    if no_baseline:
        console.print(f"[bold green]INITIALIZED[/bold green] | model {escape(p.model)}; next: parity-gate update-baseline")
    else:
        _first_baseline(p)
    if options.flow == "gpu":
        _first_gpu_baseline(p)


def _importable(root: Path, factory: str, inputs: Inputs) -> None:
    """The factory, and an inputs callable, import from ``root`` as the config will name them: refused
    before any file is written (a malformed reference is the config text's to refuse)."""
    from gate.core.refs import is_ref, resolve

    for option, ref in (("--factory", factory), ("--inputs", inputs)):
        if isinstance(ref, str) and is_ref(ref):
            resolve(ref, root, option)


def _first_gpu_baseline(p: Plan) -> None:
    """The GPU providers cannot run here: the one click (or command) that records them on the runner."""
    from gate.cli.console import console

    gpu = [n for n in p.providers if is_gpu(n)]
    console.print(f"[bold]first GPU baseline[/bold] ({escape(', '.join(gpu))}): commit and push these files, then "
                  f"{escape(RUN_GPU_BASELINES)}; it records them on the GPU runner and opens a pull request with "
                  "them (docs/action.md)", soft_wrap=True)


def _first_baseline(p: Plan) -> None:
    """Record the baselines no model has yet; a recorded one is the user's, never re-recorded here."""
    from gate import commands
    from gate.cli.console import console, progress_display
    from gate.commands.common import location

    cfg = load_config(p.config_path)
    missing = [m for m in cfg.models if not location(cfg, m).path.exists()]
    updated = []
    if missing:
        with progress_display() as progress:
            updated = commands.update_baseline(cfg, tuple(missing), cfg.select_providers(None), progress)
    show_updated(updated)
    kept = len(cfg.models) - len(missing)
    if kept:
        console.print(f"[dim]kept the baselines of {count(kept, 'model')} (`parity-gate update-baseline "
                      "--model NAME` re-records one)[/dim]", soft_wrap=True)
    # Every file init owns that is not committed as it is, kept ones too: a run that failed part-way wrote
    # them.
    owned = [c.path for c in p.changes] + [CONSTRAINTS, str(cfg.baseline_dir.relative_to(p.options.root))]
    files = " ".join(uncommitted(p.options.root, owned))
    commit = (f"commit them: git add {files} && git commit -m \"Gate the models with parity-gate\"" if files
              else "every file is committed as it is")
    recorded = sum(not u.error for u in updated)
    console.print(f"[bold green]INITIALIZED[/bold green] | {count(recorded, 'baseline')} recorded; "
                  f"{escape(commit)}", soft_wrap=True)
    raise_failed(updated)


def _adds_to_config(root: Path, name: str | None, factory: str) -> bool:
    """Whether a config exists here that does not gate this model yet, its factory under its name (one
    that does: init runs again, keeping and completing the files; a name taken by another factory is
    refused as ``add`` refuses it)."""
    try:
        path = find_config(None, root)
    except GateError:
        return False
    wanted = name or model_name(factory)
    return not any(wanted in (m.name, m.base) and m.factory == factory for m in load_config(path).models)


def add(
    factory: FactoryOpt = None,
    input_: InputOpt = None,
    inputs_ref: InputsOpt = None,
    name: NameOpt = None,
    pip_args: Annotated[str | None, typer.Option(
        "--pip-args", help="The model's own requirements (default: the packages its factory imports).")] = None,
    config: Annotated[Path | None, typer.Option("--config", envvar="PARITY_GATE_CONFIG",
                                                help="Config file (default: as `check` finds it).")] = None,
    directory: Annotated[Path, typer.Option("--dir", help="The repository root.")] = Path("."),
    no_baseline: Annotated[bool, typer.Option("--no-baseline", help="Write the files, do not run update-baseline.")]
    = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Never prompt (CI, scripts).")] = False,
) -> None:
    """Add a model to the config: its requirements go into the workflows and the constraints file, its
    first baseline is recorded; the other models are left as they are."""
    factory, inputs = _ask(factory, input_, inputs_ref, yes)
    if not no_baseline:
        require("add")
        _importable(find_config(config, directory.resolve()).parent, factory, inputs)
    _add(directory.resolve(), config, factory, inputs, name, pip_args, no_baseline)


def _add_files(root: Path, config: Path | None, factory: str, inputs: Inputs, name: str | None,
               pip_args: str | None) -> tuple[str, Path, list[str]]:
    """Add the model to the config, its requirements to the workflows and pins; say what changed in each
    file. Returns (model, config path, the files written)."""
    from gate.cli.console import console
    from gate.commands.common import display
    from gate.scaffold.add import plan_add, write

    model, path, files = plan_add(root, config, factory, inputs, name, pip_args)
    before = {f: f.read_text(encoding="utf-8") for f in files}
    write(files)
    for f in sorted(files, key=lambda f: str(display(f.resolve()))):
        verb, what = _edit(before[f], files[f])
        what = f"(model `{model}`)" if f == path else what
        console.print(f"{_MARK[verb]} {escape(str(display(f.resolve())))}  {escape(what)}", soft_wrap=True)
    return model, path, sorted(str(display(f.resolve())) for f in files)


def _edit(old: str, new: str) -> tuple[str, str]:
    """("append" | "edit", what the new text says that the old did not), for a file ``add`` changed."""
    gone = set(old.splitlines())
    added = [line.strip() for line in new.splitlines() if line not in gone and line.strip()]
    shown = "; ".join(added[:2]) + (f" (+{len(added) - 2} lines)" if len(added) > 2 else "")
    return ("append" if new.startswith(old) else "edit"), f"({shown})" if shown else ""


def _add(root: Path, config: Path | None, factory: str, inputs: Inputs, name: str | None, pip_args: str | None,
         no_baseline: bool) -> None:
    from gate.cli.console import console, progress_display

    model, path, shown = _add_files(root, config, factory, inputs, name, pip_args)
    _warn_ranges(path, model)
    if no_baseline:
        console.print(f"[bold green]ADDED[/bold green] | model {escape(model)}; next: parity-gate update-baseline "
                      f"--model {escape(model)}", soft_wrap=True)
        return
    from gate import commands

    cfg = load_config(path)
    with progress_display() as progress:
        updated = commands.update_baseline(cfg, cfg.select_models([model]), cfg.select_providers(None), progress)
    show_updated(updated)
    written = [u for u in updated if not u.error]
    files_text = " ".join([*shown, *(str(u.path) for u in written)])
    console.print(f"[bold green]ADDED[/bold green] | model {escape(model)}, {count(len(written), 'baseline')}; "
                  f"commit them: git add {escape(files_text)}", soft_wrap=True)
    raise_failed(updated)


def _warn_ranges(config_path: Path, model: str) -> None:
    """Integer inputs of the new model whose default range cannot be what it reads: said before its
    baseline is recorded on them."""
    from gate.cli.notices import input_ranges

    input_ranges(load_config(config_path).select_models([model]))


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.command("add")(add)
