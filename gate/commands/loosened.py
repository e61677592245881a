"""What the change under check does to the config that judges it (``check --changed-since``): each model
that passes is judged again, on the same run and baseline, under the config at the base: the file that judged
there (``--config``'s path or where the change renamed it from, else the one the search finds there), read
with every file it names from the base's tree (its links followed), as the change's is read from disk. Where
it fails there, it passes only under limits the change loosened (a tolerance raised, a layer rule added, a
sweep's pair limit, a slowdown allowed); a part of the run the change turns off (gradients, the reference's
promotion to float64) changes the run itself, so it is named, never judged again; a provider the base
checks goes unchecked where the change dropped it, a sweep's skip keeps it off a case, or the base fails it
for not running here (allow-missing-gpu, require). Each is said on the model (``ModelVerdict.loosened``),
never taken silently; the verdict stays the change's own; models and cases the change stopped checking are
said on the report (``unchecked``). A base config that cannot be read is said too, never read as "nothing
loosened"."""

from __future__ import annotations

import os
from dataclasses import asdict, replace
from pathlib import Path

from gate.commands.commit_tree import CommitTree
from gate.commands.common import policy, update_command
from gate.config import Config, ModelSpec, config_in, load_config
from gate.config.types import LayerTolerance
from gate.core.runs import ModelRun
from gate.core.status import ModelStatus, RunStatus, TargetStatus
from gate.errors import ConfigError
from gate.formats.baseline import Baseline
from gate.verdict.checks import layout
from gate.verdict.gpu_leg import fail_missing_gpu
from gate.verdict.judge import model_verdict
from gate.verdict.notes import Comparison
from gate.verdict.types import Loosened, ModelVerdict


def base_config(config: Config, since: str, search: Path | None) -> Config | str | None:
    """The config as it was at ``since``: the file the search from ``search`` up finds there (as
    ``find_config`` searched), or this one's path (None: it was named with --config); None where the base
    has none (a new one: nothing was loosened) or the same one; the reason where it does not load."""
    tree = CommitTree.at(config.path.resolve().parent, since)
    if tree is None:
        return f"tree at {since} could not be read"
    path: Path | None = config.path if search is None else None
    if path is not None and not tree.is_file(path):  # a --config file the change renamed: what it was
        path = tree.renamed_from(path)
    if path is None:
        start = search or config.path.parent
        for folder in (start, *start.parents):
            path = config_in(folder, tree)
            if path is not None or tree.relative(folder) in (None, "."):
                break
    if path is None:
        return None
    try:
        base = load_config(path, files=tree)
    except ConfigError as exc:
        return f"{path.name} at {since} does not load here ({str(exc).replace(f'{tree.top}{os.sep}', '')})"
    return None if base == config else base


# A model's keys that turn on a part of its run (ModelSpec field, config key): gradient layers, a reference
# float64 throughout.
SWITCHES = (("gradients", "gradients"), ("reference_promotion", "reference-promotion"))

# spec, run, baseline, the baseline's path, verdict
Judged = tuple[ModelSpec, ModelRun, Baseline | None, str, ModelVerdict]


def mark(config: Config, base: Config | str, judged: list[Judged],
         compared: dict[str, list[Comparison]]) -> None:
    """Set ``loosened`` on each model whose judgment the change's config loosened (``compared``: the
    sweeps' pairs and anchors under the base's config)."""
    if isinstance(base, str):  # what passes might pass only under the change's config
        for *_, verdict in judged:
            if verdict.status == ModelStatus.PASS:
                verdict.loosened = Loosened(unread=base)
        return
    specs = {spec.name: spec for spec in base.models}
    kept = {(q.name, q.precision) for q in config.providers}
    checked = {(p.name, p.precision) for p in base.providers}
    dropped = tuple(_label(p.name, p.precision, base, config) for p in base.providers
                    if (p.name, p.precision) not in kept)
    for spec, run, baseline, path, verdict in judged:
        # a model renamed in the change: the base's spec of the name its baseline was recorded under
        was = specs.get(spec.name) or (specs.get(baseline.model) if baseline is not None else None)
        if verdict.status != ModelStatus.PASS or was is None:
            continue
        # the base's own rules for a provider not available here (allow-missing-gpu, require) on a copy
        as_base = fail_missing_gpu(replace(run, providers=list(run.providers)), base.allow_missing_gpu,
                                   base.require)
        again = model_verdict(_renamed(was, as_base, baseline, spec), as_base, baseline, path,
                              update_command(spec, config), policy(base), compared.get(spec.name))
        first = again.first_regression if again.status == ModelStatus.REGRESSED else None
        # a provider the base fails for not running here and the change lets go unchecked
        failed = tuple(_label(p.name, p.precision, base, config) for p in again.providers
                       if p.status == TargetStatus.ERROR and (p.name, p.precision) in checked)
        # a sweep's skip the change added keeps a provider the base checks off this case: dropped for it alone
        skipped = tuple(_label(p.name, p.precision, base, config) for p in config.providers
                        if (p.name, p.precision) in checked and config.skip_reason(spec.name, p.name)
                        and not base.skip_reason(spec.name, p.name))
        untimed = _untimed(config, base, run, baseline)
        # a switch of what the run computes: judging this run again under the base's limits cannot see it
        off = tuple(key for attr, key in SWITCHES if getattr(was, attr) and not getattr(spec, attr))
        if first is not None or dropped or skipped or failed or untimed or off:
            unjudged = tuple(dict.fromkeys(dropped + skipped + failed + untimed))
            verdict.loosened = Loosened(first, unjudged, off=off)


def _untimed(config: Config, base: Config, run: ModelRun, baseline: Baseline | None) -> tuple[str, ...]:
    """The latencies the base's max-slowdown judges and nothing timed: the change removed it, and its
    results were collected under the change's config (``collect`` times only for a max-slowdown)."""
    if base.max_slowdown is None or config.max_slowdown is not None or baseline is None:
        return ()
    recorded = [(p, baseline.entry_for(p.target)[0]) for p in run.providers
                if p.status == RunStatus.OK and p.latency_ms is None]
    return tuple(f"{_label(p.name, p.precision, base, config)} latency" for p, entry in recorded
                 if entry is not None and entry.latency_ms)


def _label(name: str, precision: str, *configs: Config) -> str:
    """A provider is its name and its precision: named with it where the name alone is ambiguous (torch-cpu
    in float32 and in bfloat16)."""
    precisions = {q.precision for c in configs for q in c.providers if q.name == name}
    return f"{name}:{precision}" if len(precisions) > 1 else name


def unchecked(config: Config, base: Config) -> list[str] | None:
    """Models and sweep cases the base's config checks and the change's does not (a model's table removed,
    a sweep's case dropped from its values): nothing judges them now, and their baselines stay. A model the
    change runs as a case (``batch-sizes`` added) on the same inputs is still checked, under the case's
    name."""
    kept = {spec.name for spec in config.models}
    cases = {(spec.base, spec.factory, spec.inputs) for spec in config.models}
    return [spec.name for spec in base.models
            if spec.name not in kept and (spec.name, spec.factory, spec.inputs) not in cases] or None


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
        if own and own != layer.name:
            limits, under = asdict(was.tolerance_for(own)), asdict(was.tolerance_for(layer.name))
            moved = {k: v for k, v in limits.items() if v != under[k]}
            if moved:
                rules.append(LayerTolerance(_literal(layer.name), moved))
    return replace(was, layer_tolerances=(*was.layer_tolerances, *rules))


def _literal(name: str) -> str:
    """A glob that matches ``name`` alone (layer names hold brackets)."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in name)
