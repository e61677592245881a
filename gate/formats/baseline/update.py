"""Merge a ``ModelRun`` into the previous ``Baseline`` (``merge_run``): the reference and the entries of
the targets that ran here are rewritten; other entries are kept while the layers still match.
"""

from __future__ import annotations

from dataclasses import replace

from gate.core.runs import LayerInfo, ModelRun, ProviderLayer, ProviderRun

from .document import Baseline, BaselineLayer, Entry, EntryLayer


def merge_run(run: ModelRun, previous: Baseline | None = None) -> Baseline:
    """``run`` as a baseline, over the entries of ``previous`` it did not rewrite."""
    by_provider: dict[str, dict[str, Entry]] = {}
    if previous is not None and {x.name for x in previous.layers} == {x.name for x in run.layers}:
        # Entries of providers/devices not run here survive only while the layers still match.
        for e in previous.entries:
            by_provider.setdefault(e.target.provider, {})[e.target.label] = e
    for prun in run.providers:
        if prun.status != "ok":
            continue
        entries = by_provider.setdefault(prun.name, {})
        entries[prun.target.label] = _entry(run, prun, entries.get(prun.target.label))
    # The recorded cost is steady like a latency: an unchanged model rewrites the same bytes.
    meta = replace(run.meta, seconds=_steady(run.meta.seconds, previous.meta.seconds if previous is not None else None,
                                             COST_BAND))
    return Baseline(run.name, meta, run.reference_dtype, tuple(_layer(x) for x in run.layers),
                    tuple(e for entries in by_provider.values() for e in entries.values()))


def _entry(run: ModelRun, prun: ProviderRun, before: Entry | None) -> Entry:
    rows = {x.name: _row(prun.layers[x.name]) for x in run.layers if x.name in prun.layers}
    return Entry(prun.target, _steady(prun.latency_ms, before.latency_ms if before is not None else None),
                 prun.placement, rows, prun.session_options or None, prun.numerics or None, prun.precision)


LATENCY_BAND = 2.0
# A model's seconds move further than a latency: the first model of a process pays the imports and the
# exporter's warm-up. Shards need them to within a few times, no closer.
COST_BAND = 4.0


def _steady(now: float | None, before: float | None, band: float = LATENCY_BAND) -> float | None:
    """Keep the recorded latency (or cost) while a new measurement stays within a factor of ``band``
    of it (sub-millisecond timings on a shared runner move by 2), so rerunning update-baseline on an
    unchanged model rewrites the same bytes. A run that timed nothing (result files collected
    without ``max-slowdown``, an update ``--from`` them) keeps the recorded value."""
    if now is None:
        return before
    if before is None or not before > 0:
        return now
    return before if 1 / band <= now / before <= band else now


def _row(pl: ProviderLayer) -> EntryLayer:
    return EntryLayer(pl.status, None if pl.err is None else float(pl.err), pl.fp,
                      None if pl.noise is None else float(pl.noise))


def _layer(layer: LayerInfo) -> BaselineLayer:
    return BaselineLayer(layer.name, layer.type, layer.fp, None if layer.noise is None else float(layer.noise),
                         layer.reached, layer.data_dependent)
