"""The committed baselines on a machine their runtime entries cannot judge.

The runtime entries the repository commits (``baselines/``, ``baselines/sweeps/``) were recorded
on x86_64. A CPU class stands in only for another of its own architecture
(``Target.can_stand_in_for``), so on an Arm or macOS-arm runner no committed entry judges a
runtime: the verdict for it is ``no-baseline`` (exit 1), rightly, and a test that expects ``pass``
against the committed files holds only on x86_64.

``unjudged`` tells, by the verdict's own rule (``Baseline.entry_for`` on the target the provider
has here), which runtimes no committed entry judges on this machine. ``judging_here`` copies a
baseline folder and, where some runtime is unjudged, records this machine's entries for it with
``update-baseline`` and adds them to the committed documents, whose float64 reference (layers,
meta) stays as committed. Against that copy a test checks the same on any machine: the reference
against the committed one (architecture-independent within its noise), the runtimes against what
they recorded here. Where every runtime is judged (x86_64), the copy is the committed files as
they are.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from gate import commands
from gate.commands.common import load_baseline, location
from gate.config import Config, ModelSpec
from gate.formats.baseline import Baseline, store
from gate.runners.registry import nominal_target


def unjudged(config: Config, specs: tuple[ModelSpec, ...] | list[ModelSpec] | None = None) -> dict[str, list[str]]:
    """Per model that has a baseline, the configured providers (less those its sweep skips) none
    of its entries judges here."""
    out: dict[str, list[str]] = {}
    for spec in config.models if specs is None else specs:
        _, baseline = load_baseline(config, spec)
        if baseline is None:
            continue
        missing = [p.name for p in config.providers if config.skip_reason(spec.name, p.name) is None
                   and baseline.entry_for(nominal_target(p))[0] is None]
        if missing:
            out[spec.name] = missing
    return out


def judging_here(config: Config, specs: tuple[ModelSpec, ...] | list[ModelSpec], dest: Path) -> Path:
    """``config``'s baseline folder copied to ``dest``, with this machine's entries recorded for
    the runtimes of ``specs`` no committed entry judges here; returns ``dest``."""
    shutil.copytree(config.baseline_dir, dest)
    todo = unjudged(config, specs)
    if not todo:
        return dest
    chosen = tuple(spec for spec in specs if spec.name in todo)
    scratch = replace(config, baseline_dir=dest.parent / f"{dest.name}.recorded-here")
    commands.update_baseline(scratch, chosen, config.providers)
    here = replace(config, baseline_dir=dest)
    for spec in chosen:
        recorded = store.read(location(scratch, spec))

        def add(committed: Baseline | None, spec: ModelSpec = spec, recorded: Baseline = recorded) -> Baseline:
            assert committed is not None, f"{location(here, spec)}: the copy of the committed baseline is unreadable"
            new = [e for e in recorded.entries if e.target.provider in todo[spec.name]]
            kept = [e for e in committed.entries if e.target not in {n.target for n in new}]
            return replace(committed, entries=tuple(kept + new))

        store.update(location(here, spec), add, lambda baseline: True)
    still = unjudged(here, chosen)
    assert not still, f"recorded here, yet no entry judges {still}"
    return dest
