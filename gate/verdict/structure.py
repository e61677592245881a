"""What changed in a model's structure since its baseline: numbers decide, names follow.

A refactor that renames a module, wraps blocks in a container, drops an ``nn.Identity`` or switches
an attention implementation changes layer names and leaves the numbers alone. So a layer that is
new is first matched to a vanished one whose fingerprint it has (same shape, dtype and NaN/Inf
counts, sketches within the reference's limit): that is a rename, compared as the baseline's layer.
What stays unmatched is reported, not failed, unless it is a model output (what ships); every layer
that remains is still checked, so a change that moves a number fails where it moved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gate.core.layers import is_output
from gate.core.runs import LayerInfo, ModelRun
from gate.fingerprint import Fingerprint, relative_error
from gate.formats.baseline import Baseline, BaselineLayer

Limit = Callable[[LayerInfo, BaselineLayer], float]  # how far the reference may move at a layer


@dataclass(frozen=True)
class Structure:
    renames: dict[str, str] = field(default_factory=dict)  # a new layer -> the baseline layer it is
    new: tuple[str, ...] = ()  # new layers no vanished one matches, in execution order
    gone: tuple[str, ...] = ()  # baseline layers no new one matches, in the baseline's order

    def recorded(self, name: str) -> str:
        """The name the baseline knows ``name`` by."""
        return self.renames.get(name, name)

    @property
    def outputs_changed(self) -> list[str]:
        """Model outputs (what ships) that are new or gone: never a refactor."""
        return [n for n in (*self.new, *self.gone) if is_output(n)]


def _same(now: Fingerprint, before: Fingerprint, limit: float) -> bool:
    if (tuple(now.shape), now.dtype, now.nan, now.posinf, now.neginf) != \
            (tuple(before.shape), before.dtype, before.nan, before.posinf, before.neginf):
        return False
    if now.sketch is None or before.sketch is None:
        return False
    return relative_error(now, before) <= limit


def structure(run: ModelRun, baseline: Baseline, limit: Limit) -> Structure:
    """Renames, new and gone layers of ``run`` against ``baseline``; each vanished layer is matched
    at most once, to the first new layer (in execution order) that has its fingerprint."""
    now = {x.name for x in run.layers}
    free = [x for x in baseline.layers if x.name not in now]
    renames, new = {}, []
    for layer in (x for x in run.layers if baseline.layer(x.name) is None):
        match = next((g for g in free if is_output(g.name) == is_output(layer.name)
                      and _same(layer.fp, g.fp, limit(layer, g))), None)
        if match is None:
            new.append(layer.name)
        else:
            renames[layer.name] = match.name
            free.remove(match)
    return Structure(renames, tuple(new), tuple(g.name for g in free))


def described(st: Structure) -> list[str]:
    """What the report says of a structure change (audits at warn): renames, and what is no longer
    compared, with the command that restores per-layer coverage."""
    out = []
    if st.renames:
        shown = ", ".join(f"{old} → {new}" for new, old in list(st.renames.items())[:5])
        more = f" and {len(st.renames) - 5} more" if len(st.renames) > 5 else ""
        out.append(f"{len(st.renames)} layer{'s' * (len(st.renames) != 1)} renamed since the baseline ({shown}{more}): "
                   "compared as the baseline's layers")
    unmatched = [n for n in (*st.new, *st.gone) if not is_output(n)]
    if unmatched:
        parts = [f"{len(st.new)} new ({', '.join(st.new[:3])}{', …' if len(st.new) > 3 else ''})"] if st.new else []
        parts += [f"{len(st.gone)} gone ({', '.join(st.gone[:3])}{', …' if len(st.gone) > 3 else ''})"] if st.gone else []
        out.append(f"the model's structure changed: layers {' and '.join(parts)} since the baseline are not compared; "
                   "every layer that remains is. `update-baseline` restores per-layer coverage")
    return out
