"""What the change under check does to the config that judges it (``check --changed-since``): each model
that passes is judged again, on the same run and baseline, under the config at the base (its file under
either name, with the sweep files and inputs it reads as they were there). Where it fails there, it passes
only under limits the change loosened (a tolerance raised, a layer rule added, a sweep's pair limit, a
slowdown allowed); a provider the base checks and the change dropped goes unchecked. Both are said on the
model (``ModelVerdict.loosened``), never taken silently; the verdict stays the change's own. A base config
that cannot be read is said too, never read as "nothing loosened"."""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from dataclasses import asdict, replace
from pathlib import Path

from gate.commands.common import policy, update_command
from gate.config import Config, ModelSpec, load_config
from gate.config.types import LayerTolerance
from gate.core.files import PYPROJECT, STANDALONE
from gate.core.runs import ModelRun
from gate.core.status import ModelStatus
from gate.errors import ConfigError
from gate.formats.baseline import Baseline
from gate.verdict.checks import layout
from gate.verdict.judge import model_verdict
from gate.verdict.notes import Comparison
from gate.verdict.types import Loosened, ModelVerdict

# What a config reads besides itself, taken from the base with it: sweep files it includes, input files.
READS = (":(glob)**/*.toml", ":(glob)**/*.npz")


def base_config(config: Config, since: str) -> Config | str | None:
    """The config as it is at ``since``, under this file's name or the other one, read from a copy of what
    it reads there; None where the base has no config in this folder (a new one: nothing was loosened);
    the reason where it has one that does not load."""
    folder = config.path.parent
    if _git(folder, "diff", "--quiet", since, "--", *READS) is not None:  # no config or file it reads changed
        return None
    for name in dict.fromkeys((config.path.name, PYPROJECT, STANDALONE)):
        shown = _git(folder, "show", f"{since}:./{name}")
        if shown is None or (name == PYPROJECT and b"[tool.parity-gate]" not in shown):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "base.tar"  # on disk, never in memory: input files may be large
            for pattern in READS:  # one archive each: a pattern that matches nothing fails its own
                if _git(folder, "archive", f"--output={tree}", since, "--", pattern) is not None:
                    with tarfile.open(tree) as tar:
                        tar.extractall(tmp, filter="data")
            (Path(tmp) / name).write_bytes(shown)
            try:
                return load_config(Path(tmp) / name)
            except ConfigError as exc:
                return f"{name} at {since} does not load here ({str(exc).replace(tmp + '/', '')})"
    return None


def _git(folder: Path, *args: str) -> bytes | None:
    try:
        proc = subprocess.run(["git", *args], cwd=folder, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


# spec, run, baseline, the baseline's path, verdict
Judged = tuple[ModelSpec, ModelRun, Baseline | None, str, ModelVerdict]


def mark(config: Config, base: Config | str, judged: list[Judged],
         compared: dict[str, list[Comparison]]) -> None:
    """Set ``loosened`` on each model whose judgment the change's config loosened (``compared``: the
    sweeps' pairs and anchors under the base's config)."""
    if isinstance(base, str):
        for *_, verdict in judged:
            verdict.loosened = Loosened(unread=base)
        return
    specs = {spec.name: spec for spec in base.models}
    dropped = tuple(p.name for p in base.providers if p.name not in {q.name for q in config.providers})
    for spec, run, baseline, path, verdict in judged:
        was = specs.get(spec.name)
        if verdict.status != ModelStatus.PASS or was is None:
            continue
        again = model_verdict(_renamed(was, run, baseline, spec), run, baseline, path,
                              update_command(spec, config), policy(base), compared.get(spec.name))
        first = again.first_regression if again.status == ModelStatus.REGRESSED else None
        if first is not None or dropped:
            verdict.loosened = Loosened(first, dropped)


def _renamed(was: ModelSpec, run: ModelRun, baseline: Baseline | None, spec: ModelSpec) -> ModelSpec:
    """The base's spec, its layer rules following the layers the structure matched to other names (a rule
    renamed with its module holds what it held): each renamed layer gets the base's limits of the name the
    baseline knows it by."""
    if baseline is None or not run.layers or not was.layer_tolerances:
        return was
    st = layout(run, baseline, spec)
    rules = []
    for layer in run.layers:
        own = st.own(layer.name)
        if own != layer.name:
            limits, under = asdict(was.tolerance_for(own)), asdict(was.tolerance_for(layer.name))
            moved = {k: v for k, v in limits.items() if v != under[k]}
            if moved:
                rules.append(LayerTolerance(_literal(layer.name), moved))
    return replace(was, layer_tolerances=(*was.layer_tolerances, *rules))


def _literal(name: str) -> str:
    """A glob that matches ``name`` alone (layer names hold brackets)."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in name)
