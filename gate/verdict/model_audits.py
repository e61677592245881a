"""Checks of a model and of what ships, beside the per-layer ones: dynamic dimensions the export
made static (or specialized), modules the factory left in training mode that change the outputs,
a forward that draws random numbers, how many layers the shipped graph lets the gate see, the
layers a runtime compared when the baseline was recorded that it no longer can, ``layer-tolerances``
rules that match no layer, weights whose change no layer showed, the model's own casts changed, and its
outputs reordered."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from gate.config import LayerTolerance, ModelSpec
from gate.core.layers import is_output
from gate.core.runs import ModelRun
from gate.core.spans import span
from gate.core.status import AuditStatus, Check, LayerStatus, SiteKind
from gate.formats.baseline import Baseline
from gate.verdict import casts as model_casts
from gate.verdict.hints.weights import values_changed
from gate.verdict.notes import LayerMapping
from gate.verdict.rows import Audit
from gate.verdict.structure import Structure
from gate.verdict.types import ProviderVerdict


def _static(declared: Mapping[str, Mapping[Any, str]], now: Mapping[str, Mapping[str, str]]
            ) -> list[tuple[str, str, str]]:
    """(input, dimension, its name) dynamic in ``declared`` and not in ``now``."""
    return [(name, str(dim), label) for name, dims in declared.items() for dim, label in dims.items()
            if str(dim) not in now.get(name, {})]


def dynamic_shape(spec: ModelSpec, run: ModelRun, baseline: Baseline | None) -> list[Audit]:
    if run.meta.graph_digest is None:  # nothing was exported
        return []
    now = run.meta.dynamic_dims or {}
    out = [Audit(Check.DYNAMIC_SHAPE, AuditStatus.FAIL, f"input `{name}` dimension {dim} is static in the exported graph (the "
                 f"export specialized it); the config declares it dynamic (`{label}`)")
           for name, dim, label in _static(spec.dynamic_shapes, now)]
    if baseline is not None:
        declared = {(name, dim) for name, dim, _ in _static(spec.dynamic_shapes, now)}
        out += [Audit(Check.DYNAMIC_SHAPE, AuditStatus.FAIL,
                      f"input `{name}` dimension {dim} was dynamic (`{label}`) in the baseline's graph and is static "
                      "now, and the config does not declare it: a caller that feeds another size fails")
                for name, dim, label in _static(baseline.meta.dynamic_dims or {}, now) if (name, dim) not in declared]
    return out


def training_mode(run: ModelRun) -> list[Audit]:
    training = run.meta.training
    if not training:
        return []
    modules = training["modules"]
    shown = ", ".join(modules[:8]) + (f" and {len(modules) - 8} more" if len(modules) > 8 else "")
    if training["changed_at"] is None:
        return [Audit(Check.TRAINING_MODE, AuditStatus.WARN, f"{len(modules)} module(s) were left in training mode ({shown}); eval "
                      "mode changes no layer's output, so the gate ran it in eval mode")]
    change = training.get("change")
    if run.meta.random_draws:  # two forwards that draw differ anyway: the comparison cannot tell
        said = (f"{len(modules)} module(s) were left in training mode ({shown}); whether eval mode changes "
                "the outputs cannot be told, since the forward draws random numbers in eval mode too")
        return [Audit(Check.TRAINING_MODE, AuditStatus.WARN, said, layer=training["changed_at"])]
    return [Audit(Check.TRAINING_MODE, AuditStatus.FAIL, f"the factory left {len(modules)} module(s) in training mode ({shown}), "
                  f"and eval mode changes the outputs from {training['changed_at']}"
                  + (f" (by {change:.3g})" if change is not None else "")
                  + ": a deployment that runs the model as returned computes something else; call model.eval() "
                  "in the factory, or fix the modules", layer=training["changed_at"])]


def random_draws(run: ModelRun) -> list[Audit]:
    draws = run.meta.random_draws
    if not draws:
        return []
    said = (f"the forward draws random numbers ({'; '.join(draws)}): no two runs compute the same, so a "
            "regression there is a draw, not a change; pass `training=False` to functional dropout, call "
            "`model.eval()`, or draw from a seeded generator")
    return [Audit(Check.RANDOM_DRAWS, AuditStatus.WARN, said)]


def mapping(run: ModelRun) -> LayerMapping | None:
    kinds = Counter(site.kind for site in run.onnx_map.values())
    why = Counter(site.reason for site in run.onnx_map.values() if site.kind in (SiteKind.FOLDED, SiteKind.ABSENT))
    if not run.onnx_map:
        return None
    mapped = kinds[SiteKind.VALUE] + kinds[SiteKind.OUTPUT]
    return LayerMapping(len(run.layers), mapped, kinds[SiteKind.FOLDED], kinds[SiteKind.ABSENT],
                        {str(k): n for k, n in why.most_common(10)})


def recorded_as(spec: ModelSpec, baseline: Baseline | None) -> list[Audit]:
    """A baseline recorded under another model's name that no configured model has: this model, renamed."""
    if baseline is None or baseline.model == spec.name:
        return []
    said = (f"its baseline was recorded as model `{baseline.model}`, which no model is now: judged as this "
            f"model renamed; `update-baseline` records it as `{spec.name}`")
    return [Audit(Check.STRUCTURE, AuditStatus.WARN, said)]


def coverage(run: ModelRun, baseline: Baseline | None, st: Structure | None) -> list[Audit]:
    """Layers a runtime gave a value for when its baseline was recorded and gives none now (the shipped
    graph's nodes lost their metadata, the exporter folds them): the gate compares less inside the model
    than it did, and a re-record would make that the rule. One note for the model, whatever the runtimes."""
    if baseline is None:
        return []
    lost: dict[str, str] = {}
    fused = True  # every one folded by the exporter's optimizer: what ships computes it fused
    for p in run.providers:
        entry = baseline.entry_for(p.target)[0]
        if entry is None or not p.layers:  # a runtime that did not run is a finding of its own
            continue
        for layer in run.layers:
            now = p.layers.get(layer.name)
            was = entry.layers.get(st.recorded(layer.name) if st else layer.name)
            if (now is None or now.status in (LayerStatus.ABSENT, LayerStatus.FOLDED)) and \
                    was is not None and was.status == LayerStatus.OK:
                lost.setdefault(layer.name, now.reason if now is not None and now.reason else "not captured")
                fused = fused and now is not None and now.status == LayerStatus.FOLDED
    if not lost:
        return []
    first, why = next(iter(lost.items()))
    advice = ("The exporter's optimizer fuses them now, as the graph that ships computes them: nothing to "
              "fix where the change is intended" if fused else
              "The gate sees less inside the model than it did: fix what stripped or folded them before "
              "re-recording, which would make this the rule")
    return [Audit(Check.COVERAGE, AuditStatus.WARN,
                  f"{len(lost)} layer{'s' if len(lost) > 1 else ''} a runtime compared in the baseline "
                  f"{'have' if len(lost) > 1 else 'has'} no value in the graph now; "
                  f"the first, {span(first)}: {why}. {advice}", layer=first)]


def unmatched_rules(models: Iterable[ModelSpec], runs: Mapping[str, ModelRun]
                    ) -> dict[str, tuple[LayerTolerance, ...]]:
    """Per case, its ``layer-tolerances`` rules that match no layer that any case of its configured model
    ran (gradients, and layers the export folds: they ran in PyTorch). Said only where every case ran:
    a rule may match what only another case computes."""
    cases: dict[str, list[ModelSpec]] = {}
    for spec in models:
        cases.setdefault(spec.base or spec.name, []).append(spec)
    out: dict[str, tuple[LayerTolerance, ...]] = {}
    for group in cases.values():
        ran = [runs.get(s.name) for s in group]
        if any(run is None or not run.layers for run in ran):
            continue
        rules = group[0].unmatched(layer.name for run in ran if run is not None for layer in run.layers)
        out.update({s.name: rules for s in group if rules})
    return out


def layer_tolerances(spec: ModelSpec, rules: tuple[LayerTolerance, ...]) -> list[Audit]:
    """A rule that matches no layer: the tighter (or looser) limit its author meant applies nowhere."""
    return [Audit(Check.LAYER_TOLERANCES, AuditStatus.FAIL,
                  f"{span(rule.where + ' = ' + json.dumps(rule.pattern))} matches no layer of "
                  f"{span(spec.base or spec.name)}: its limits apply nowhere; fix the glob or delete the "
                  "rule")
            for rule in rules]


UNSEEN = 1e-12  # a reference drift at most this is none: float64's run-to-run noise is ~1e-16


def weights_unseen(run: ModelRun, baseline: Baseline | None, st: Structure | None,
                   providers: list[ProviderVerdict]) -> list[Audit]:
    """Tensors whose values changed (``values_changed``: no re-expression) where nothing else failed and no
    reference layer moved at all: the configured inputs never read the changed values (a layer that moved
    within its limits was judged by them). A weight change is never a refactor, so it fails, named, for the
    reviewer to record it or widen the inputs."""
    reference = providers[0].rows if providers else []
    if baseline is None or not reference or any(r.failed for p in providers for r in p.rows):
        return []
    if any(r.value is not None and r.value > UNSEEN for r in reference):
        return []
    changed = values_changed(run, baseline, st.renames if st else {})
    if not changed:
        return []
    shown = ", ".join(map(span, changed[:3])) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return [Audit(Check.WEIGHTS_UNSEEN, AuditStatus.FAIL,
                  f"the model's weights changed ({shown}) and no layer moved with them on the configured "
                  "inputs: they never read what changed (embedding rows or positions they do not reach, a "
                  "module the forward does not call); widen the inputs to compare it")]


def casts(spec: ModelSpec, run: ModelRun, baseline: Baseline | None, st: Structure | None) -> list[Audit]:
    """The model's own casts below float32 changed (``gate.verdict.casts``): the reference promotes
    them and need not move, yet what ships computes at another precision. A change of the model; not
    judged where the reference runs them as written (``reference-promotion = false``)."""
    if baseline is None or not spec.reference_promotion or not run.layers:
        return []
    changed = model_casts.changed(run, baseline, st.renames if st is not None else None)
    if not changed:
        return []
    call, (was, now) = next(iter(changed.items()))
    order = [x.name for x in run.layers]
    at = model_casts.position(order, call)
    more = f" and {len(changed) - 1} more module call{'s' * (len(changed) > 2)}" if len(changed) > 1 else ""
    return [Audit(Check.CASTS, AuditStatus.FAIL,
                  f"the model's code casts below float32 {'more' if now > was else 'less'} often than "
                  f"in the baseline, at {span(call)} ({was} -> {now} casts){more}: the float64 reference "
                  "promotes them and need not move, but what ships computes at another precision",
                  layer=order[at] if at < len(order) else None)]


def output_order(run: ModelRun, baseline: Baseline | None, st: Structure | None) -> list[Audit]:
    """The same outputs in another order (a dict's keys reordered): each layer holds its values, named by
    key, but the exported graph's outputs are positional, so a caller that reads them by position gets
    another one. An output new or gone fails on its own row (``checks.reference_rows``)."""
    if baseline is None:
        return []
    was = [x.name for x in baseline.layers if is_output(x.name)]
    layers = [x.name for x in run.layers if is_output(x.name)]
    now = [st.recorded(name) if st else name for name in layers]  # as the baseline knows them
    if sorted(was) != sorted(now) or was == now:
        return []
    moved = [(i, layers[i], was.index(old)) for i, old in enumerate(now) if was[i] != old]
    i, now_name, j = moved[0]
    more = f" ({len(moved) - 1} more moved)" if len(moved) > 1 else ""
    return [Audit(Check.OUTPUT_ORDER, AuditStatus.FAIL,
                  f"the model's outputs are in another order: {span(now_name)} is output {i}, was output "
                  f"{j}{more}: a caller that reads them by position gets another one",
                  layer=now_name)]
