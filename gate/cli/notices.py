"""What the CLI says around a command's result (a fallen-back fingerprint backend, packages a workflow
would not install, baselines no model owns, integer inputs on a wrong-looking range, where GPU
baselines are recorded, a missing git diff driver): lines on stderr, never a change of the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from gate import env

if TYPE_CHECKING:
    from gate.config import Config, ModelSpec


def backend() -> None:
    """One line on stderr when the C kernel was not built and fingerprints fall back to NumPy
    (pip shows the build's own warning only with -v)."""
    from gate import fingerprint

    if fingerprint.backend == "numpy" and fingerprint.native_error and not env.backend():
        from gate.cli.console import err_console

        err_console.print(f"[yellow]notice:[/yellow] {fingerprint.native_error}: fingerprints use the NumPy "
                          "backend (same results, ~100x slower); reinstall parity-gate where a C compiler is "
                          "available", soft_wrap=True)


def install_gaps(cfg: Config) -> None:
    """Models whose imports the repository's workflow would not install: said before anything runs."""
    from gate.cli.console import err_console
    from gate.scaffold.add import install_gaps as gaps

    for line in gaps(cfg):
        err_console.print(f"[yellow]warning:[/yellow] {escape(line)}", soft_wrap=True)


def orphans(cfg: Config) -> None:
    """One warning on stderr naming the baseline files no configured model owns (a model dropped from
    the config: nothing checks those files any more)."""
    from gate.cli.console import err_console
    from gate.commands.common import display, orphaned_baselines
    from gate.formats.baseline.names import SUFFIX

    found = orphaned_baselines(cfg)
    cases: dict[str, list[str]] = {}
    for spec in cfg.models:  # a model now run as cases (batch-sizes added): its table is there
        cases.setdefault(spec.base, []).append(spec.name)
    for p in [p for p in found if p.name.removesuffix(SUFFIX) in cases]:
        stem = p.name.removesuffix(SUFFIX)
        now = escape(", ".join(f"`{c}`" for c in cases[stem][:8]))
        err_console.print(f"[yellow]warning:[/yellow] {escape(str(display(p)))}: nothing checks this "
                          f"baseline: `{escape(stem)}` runs as {now} now; "
                          "delete the file once their baselines are recorded", soft_wrap=True)
        found.remove(p)
    if found:
        names = ", ".join(str(display(p)) for p in found)
        one = len(found) == 1
        what, them = ("this baseline", "it") if one else ("these baselines", "them")
        err_console.print(f"[yellow]warning:[/yellow] {escape(names)}: no model in {escape(str(display(cfg.path)))} "
                          f"owns {what}, so nothing checks {them}; restore its model's table (or sweep), or "
                          f"delete the file{'' if one else 's'}", soft_wrap=True)


def input_ranges(models: tuple[ModelSpec, ...]) -> None:
    """Integer inputs named like a mask, a token type, a position or an index that take the default
    range (gate.config.input_ranges): one warning each, on stderr."""
    from gate.cli.console import err_console
    from gate.config.input_ranges import range_advice

    for a in range_advice(models):
        err_console.print(f"[yellow]warning:[/yellow] {escape(a.message())}", soft_wrap=True)


def gpu_workflow(cfg: Config) -> str:
    """How the repository records GPU baseline entries on its GPU runner, when it has the workflow
    `init --flow gpu` writes ("" otherwise)."""
    from gate.scaffold.add import workflow_root
    from gate.scaffold.workflows import GPU_BASELINES, RUN_GPU_BASELINES

    root = workflow_root(cfg.root)
    return RUN_GPU_BASELINES if root is not None and (root / GPU_BASELINES).is_file() else ""


def diff_driver(root: Path, baseline_dir: Path) -> None:
    """One line on stderr where the repository routes baselines to the driver and this clone lacks it
    (a teammate's fresh clone); never in CI, whose clones diff nothing for a person."""
    if env.in_ci():
        return
    from gate.cli.console import err_console
    from gate.scaffold.diff_driver import INSTALL, DriverState, state

    try:
        sample = (baseline_dir / "model.msgpack.zst").relative_to(root).as_posix()
    except ValueError:
        return
    if state(root, sample) == DriverState.MISSING:
        err_console.print(f"[yellow]notice:[/yellow] git diff shows baselines as binary in this clone: run "
                          f"`{INSTALL}` once", soft_wrap=True)
