"""The first ONNX Runtime provider started as soon as the graph exists, beside a float64 reference
that still runs in a forked child (``gate.commands.beside``), instead of after it.

The provider's capture reads the graph, the inputs and the layer map, which the export made from
the probe's records; only its judging reads the reference. So its worker (the spare) starts on the
probe's run with one intra-op thread less (the child has one), and waits, once it has captured, for
the parent's word (``gate.runners.ahead``): ``READY`` when the reference is in the bundle and asks
for the values the capture marked, sized as it sized them; else ``DROP``, and the provider runs
afresh after the reference, as without this. Its timeout counts from the word.

``auto`` (``PARITY_GATE_AHEAD``) goes ahead from ``AUTO_CPUS``, after a fresh export (not
after a binding of new weights: ``may``), where no latency is read (the timed runs would run on fewer
threads than the baseline's) and where the memory available holds what it adds (``fits``: the cap).
Measured on 2 CPUs: docs/performance.md#the-provider-beside-the-reference-on-2-cpus. Every rule is
here; ``prepare`` and ``pipeline`` ask.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gate import env
from gate.commands.beside import cpus
from gate.commands.providers import is_isolated, start_isolated
from gate.config import Config, ModelSpec, ProviderSpec
from gate.core.runs import LayerInfo, ModelRun, ProviderRun
from gate.core.stages import DETAIL, Progress
from gate.formats.results import Bundle
from gate.runners.ahead import CAPTURED, DROP, READY
from gate.runners.base import Subject
from gate.runners.isolation import Spare, Started

if TYPE_CHECKING:
    from gate.export.record import Graph
    from gate.model.torch_hooks import LayerOutput

# The provider's capture on one thread less, per second of the probe's float32 forward (hooked, on
# all threads): what ``beside`` adds to the time a child's reference may take. Measured on the Zen 4
# host (2 CPUs, one ONNX Runtime thread): GPT-2 at 512 and 2048 tokens, see the docs above.
CAPTURE_COST = 2.5
# ``auto``: the CPUs from which a provider goes ahead. On 2 (the Zen 4 host), GPT-2 at 2048 tokens after a
# code change took 1-4 s less (2-8%) at 1.43x-1.55x the recipe's peak against 1.08x, past the cost
# curve's 1.5x bar: not worth it there. From 4 the worker captures on 3 threads beside the child's one
# (not measured: no machine with 4 CPUs was lent); ``on`` goes ahead on any.
AUTO_CPUS = 4


@dataclass
class Ahead:
    """One model's provider that may go ahead, and its worker once started."""

    provider: ProviderSpec
    config: Config
    spec: ModelSpec
    folder: Path  # the bundle
    spare: Spare
    threads: int | None  # the run's intra-op threads (None: the runtime's own)
    ahead: int  # the worker's while the reference runs
    progress: Progress
    started: Started | ProviderRun | None = None
    provisional: ModelRun | None = field(default=None, repr=False)
    mode: str = "auto"  # PARITY_GATE_AHEAD
    said: str | None = None  # READY or DROP, once told
    since: float = 0.0  # when it started

    @classmethod
    def of(cls, providers: tuple[ProviderSpec, ...], config: Config, spec: ModelSpec, folder: Path,
           spare: Spare | None, threads: int | None, timed: bool, progress: Progress) -> Ahead | None:
        """The provider that would take the spare, where it may go ahead (``timed``: a latency is
        read, and its runs must not run on fewer threads); else None."""
        mode, here = env.ahead(), cpus()
        if mode == "off" or spare is None or timed or spec.repeats or (mode == "auto" and here < AUTO_CPUS):
            return None
        order = sorted(providers, key=lambda p: not p.kind.torch)  # ``run_providers``' order
        first = next((p for p in order if is_isolated(p, config.isolation)
                      and not config.skip_reason(spec.name, p.name)), None)
        if first is None or first.kind.torch:
            return None
        return cls(first, config, spec, folder, spare, threads, max(1, (threads or here) - 1), progress,
                   mode=mode)

    def cost(self, forward_s: float, binding: bool) -> float:
        """The seconds the capture is predicted to take beside the child (``beside.start``); none
        where it would not go ahead (``may``)."""
        return CAPTURE_COST * forward_s if self.may(binding) else 0.0

    def may(self, binding: bool) -> bool:
        """Whether it may go ahead after this export: ``auto`` after a trace, not after a binding of
        new weights (GPT-2 at 512 tokens: 0.7 s saved at 1.21x the recipe's peak against 1.04x)."""
        return not binding or self.mode == "on"

    def fits(self, weight_bytes: int) -> bool:
        """The cap on what it adds: the memory available now holds the worker's session of the
        weights, its capture budget and the fixed margin, beside what the gate and the child hold."""
        from gate.model import budget

        available = budget.available_mb()
        capture = (self.config.isolation.capture_mb or 0) * 2**20
        needed = budget.FIXED_MB + (2 * weight_bytes + capture) / budget.MB
        return available is not None and available >= needed

    def start(self, run: ModelRun, graph: Graph, records: list[LayerOutput],
              inputs: list[np.ndarray]) -> None:
        """The worker started on the graph, with the probe's ``records`` for the reference's layers."""
        provisional = ModelRun(run.name, run.meta)
        provisional.layers = [LayerInfo(r.name, r.type, r.fp) for r in records]
        provisional.onnx_map = graph.layer_map(records)
        Bundle(self.folder).write(provisional, graph.path, inputs)
        self.provisional, self.since = provisional, time.monotonic()
        subject = Subject(provisional, self.folder, None, self.threads, [], self.spec.output_tolerance,
                          detail=self._detail)
        self.started = start_isolated(self.provider, subject, self.config.isolation, self.config.path,
                                      self.spare, self.ahead)

    def _detail(self, message: str) -> None:
        """The worker's progress, said while the reference's stage runs: named as the provider's."""
        if message.startswith(DETAIL):
            message = f"{DETAIL}{self.provider.name} {message[len(DETAIL):]}"
        self.progress(message)

    @property
    def went(self) -> bool:
        """Whether the graph and inputs are in the bundle (``start``); ``settle`` writes the rest."""
        return self.provisional is not None

    def capturing(self) -> bool:
        """Whether the worker still captures: it has not said it waits for the reference, and has run
        for less than the provider's timeout (a hung capture does not hold the parent)."""
        s = self.started
        return isinstance(s, Started) and s.said != CAPTURED and s.proc.poll() is None \
            and time.monotonic() - self.since < self.config.isolation.timeout_s

    def settle(self, run: ModelRun, outputs: list[np.ndarray]) -> None:
        """The reference is done: into the bundle, and the worker told whether its capture stands."""
        from gate.runners.onnxruntime import value_bytes  # onnx: only where a graph was exported

        Bundle(self.folder).write(run, None, None, outputs)
        if not isinstance(self.started, Started):
            return
        was = self.provisional
        # A worker that ended before the word (a crash, the memory beside the child) runs again, alone.
        alive = self.started.proc.poll() is None
        same = was is not None and alive and run.error is None and bool(run.layers) \
            and run.onnx_map == was.onnx_map and value_bytes(run) == value_bytes(was)
        self.said = READY if same else DROP
        self.started.tell(self.said)
        if not same:
            self.started.close()
            self.started = None

    def result(self, provider: ProviderSpec) -> ProviderRun | None:
        """``provider``'s run where it went ahead and stands; else None (it runs as usual)."""
        s, self.started = self.started, None
        if provider is not self.provider or s is None:
            self.started = s
            return None
        if isinstance(s, ProviderRun):
            return s
        if self.said != READY:  # pragma: no cover - settle tells before the providers run
            s.close()
            return None
        return s.wait(self.config.isolation.timeout_s)

    def close(self) -> None:
        """A worker neither told nor waited for (the model failed, an exception): ended."""
        s, self.started = self.started, None
        if isinstance(s, Started):
            s.tell(DROP)
            s.close()
