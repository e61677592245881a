"""The float64 reference beside the export: when it runs in a forked child (``gate.runners.forked``)
while the parent exports, and whether the parent waits for it or runs it itself. Every rule is here;
``prepare`` asks.

The export's trace is mostly one thread of Python, the reference torch kernels, so a one-thread child
runs on a CPU the trace leaves idle, at a peak no higher. ``auto`` starts one only where the probe
predicts the parent would wait for it when the export ends (``hides``, by the rule ``wait_or_stop``
applies): a longer one would only hold memory beside it. It starts with the export's trace or weight
binding (``Slot``); a graph from the store leaves too little time. A child still far from done when
the export ends is stopped and the parent runs the reference on all its threads (``wait_or_stop``).
Where no child starts, ``prepare`` runs the reference before the export."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.model.build import BuiltModel
    from gate.runners.forked import Forked
    from gate.runners.reference import Reference

BESIDE = "beside the export, in a forked child"  # the reference's progress line says so where it ran so
AUTO_CPUS = 2  # ``auto``: the CPUs this process may use from which a child starts
# What the child may add beside the export, per byte of float32 weights: a float64 copy (the
# reference's fallback for models with their own ``_apply``) and the export's own copies.
BESIDE_COPIES = 3.0
# The speed-up of the parent's threads over the child's one, per thread, on the reference's kernels,
# at the low end of what float64 forwards show (convolutions gain less than matmuls): the child's
# work is kept unless a run from scratch clearly pays.
THREAD_GAIN = 0.8
# A float32 forward (the probe's) shorter than this: the fork and the child's start would cost more
# than the reference they move.
MIN_FORWARD_S = 0.05
# ``auto`` predicts both sides. The child: the probe's float32 forward, FLOAT64_COST times longer, on one
# thread. The export: the longer of a cost per traced operation and per GB of weights written (a model
# of few large layers costs what writing its weights does). Fitted with scripts/bench_reuse.py.
FLOAT64_COST = 2.0
EXPORT_S_PER_OP = 0.009
EXPORT_S_PER_GB = 3.0
# A binding of new weights into the stored structure: less per operation than a trace (no model Python).
BIND_S_PER_OP = 0.004
BIND_S_PER_GB = 2.4


@dataclass(frozen=True)
class Beside:
    """A reference running in a child, with the layer count it will reach (the probe's)."""

    child: Forked[Reference]
    layers: int


def start(built: BuiltModel, layers: int, forward_s: float, ops: int, binding: bool = False) -> Beside | None:
    """The reference started in a child, where it may run beside the export; None where not. The
    arguments are the probe's (records, float32 forward seconds, traced operations); ``binding``: the
    export binds new weights into the stored structure, not a trace."""
    from gate import env
    from gate.runners import forked
    from gate.runners.reference import run_reference

    mode = env.beside()
    if mode == "off" or forward_s < MIN_FORWARD_S or not forked.available():
        return None
    weights = weight_bytes(built)
    if mode == "auto" and (env.usable_cpus() < AUTO_CPUS
                           or not hides(forward_s, ops, weights, forked.threads(), binding)):
        return None
    if not _fits(weights):
        return None
    promote = built.spec.reference_promotion

    def reference(tick: Callable[[], None]) -> Reference:
        ref = run_reference(built, lambda _: None, promote, tick)
        if ref.dtype != "float64":  # the fallback says so on the parent's console: it runs there
            raise RuntimeError("float32 fallback")
        return ref

    return Beside(forked.Forked(reference), layers)


@dataclass
class Slot:
    """The child, started (``make``) as the export's trace or weight binding starts: the one stage long
    enough to hide the reference."""

    make: Callable[[bool], Beside | None]
    child: Beside | None = None
    binding: bool = False  # the child started beside a binding of new weights, not a trace

    def start(self, binding: bool = False) -> None:
        if self.child is None:
            self.binding = binding
            self.child = self.make(binding)


@contextlib.contextmanager
def stopped_on_error(slot: Slot) -> Iterator[Slot]:
    """A block that waits for the child's reference: an exception out of it ends the child too."""
    try:
        yield slot
    except BaseException:
        if slot.child is not None:
            slot.child.child.stop()
        raise


def wait_or_stop(beside: Beside) -> Reference | None:
    """After the export: the child's reference, where waiting is shorter than running it here from
    the start; else None (the child stopped)."""
    from gate.runners import forked

    child = beside.child
    elapsed = time.perf_counter() - child.started
    if child.running and not _worth_waiting(child.done, beside.layers, elapsed, forked.threads()):
        child.stop()
        return None
    return child.result()


def hides(forward_s: float, ops: int, weight_bytes: int, threads: int, binding: bool = False) -> bool:
    """Whether the child's reference, as the probe predicts it, is far enough at the export's end
    (``binding``: a weight binding) for the parent to wait for it (``_pays``)."""
    child = forward_s * FLOAT64_COST * max(1.0, THREAD_GAIN * threads)
    per_op, per_gb = (BIND_S_PER_OP, BIND_S_PER_GB) if binding else (EXPORT_S_PER_OP, EXPORT_S_PER_GB)
    return _pays(min(1.0, max(ops * per_op, weight_bytes / 1e9 * per_gb) / child), threads)


def _worth_waiting(done: int, layers: int, elapsed: float, threads: int) -> bool:
    """Whether the child, at its pace so far, ends before a run here from scratch would."""
    return done > 0 and layers > 0 and _pays(min(done / layers, 1.0), threads)


def _pays(share: float, threads: int) -> bool:
    """Whether a child ``share`` through its reference ends sooner than a run from scratch on the
    parent's threads: what is left of its time, (1 - share), against 1 / (their gain over its one)."""
    return 1 - share <= 1 / max(1.0, THREAD_GAIN * threads)


def weight_bytes(built: BuiltModel) -> int:
    from gate.model import budget

    return budget.tensor_bytes([*built.module.parameters(), *built.module.buffers()])


def _fits(weight_bytes: int) -> bool:
    """Whether the memory available now holds what the child may add beside the export."""
    from gate.model import budget

    available = budget.available_mb()
    return available is not None and available >= budget.FIXED_MB + BESIDE_COPIES * weight_bytes / budget.MB
