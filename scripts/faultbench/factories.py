"""What the gate's config names: ``faultbench.factories:<model>__<kind>`` is a zero-argument factory
(``base``, a model-side fault, a refactor, or ``attn_sdpa``), ``graph__<model>__<kind>`` a
transform (ModelProto -> ModelProto) that injects a graph fault, and ``unseen__<model>`` the
deployment transform whose data file and environment carry the faults no key sees (``unseen``)."""

from __future__ import annotations

from faultbench import graph_faults, inside, refactors, unseen
from faultbench.faults import MODEL_FAULTS
from faultbench.models import ARCHS

BENIGN = {**refactors.REFACTORS, **inside.REFACTORS}  # every behaviour-preserving change, by kind


def _factory(model: str, kind: str):
    arch = ARCHS[model]

    def factory():
        if kind == "attn_sdpa":
            if not arch.attention:
                raise refactors.NotApplicable
            return arch.build(attention="sdpa")
        m = arch.build()
        if kind in ("base", *refactors.RUNS):
            return m
        if kind in MODEL_FAULTS[model]:
            fault = MODEL_FAULTS[model][kind]
            fault.apply(m, fault.layer)
            return m
        return BENIGN[kind](m, arch.build)

    factory.__name__ = f"{model}__{kind}"
    return factory


def _transform(model: str, kind: str):
    def transform(proto):
        return graph_faults.APPLY[kind](proto, graph_faults.TARGETS[model][kind])

    transform.__name__ = f"graph__{model}__{kind}"
    return transform


def __getattr__(name: str):
    parts = name.split("__")
    if len(parts) == 2 and parts[0] == "unseen" and parts[1] in ARCHS:
        return unseen.transform
    if len(parts) == 3 and parts[0] == "graph" and parts[1] in ARCHS:
        return _transform(parts[1], parts[2])
    if len(parts) == 2 and parts[0] in ARCHS:
        return _factory(parts[0], parts[1])
    raise AttributeError(name)
