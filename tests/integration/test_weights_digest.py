"""gate.model.weights.weights_digest: the whole digest always hashed, the tensors' digests taken from a
baseline only where its whole digest is this model's, and only by a command that reads."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from gate.model.weights import weights_digest
from gate.pipeline.stages import ReusePolicy
from tests.support.verdicts import baseline


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))


def _other(tensors: dict[str, str]) -> dict[str, str]:
    """Tensor digests no hash of these weights gives (what only a taken record can hold)."""
    return {name: f"{i:016x}" for i, name in enumerate(tensors)}


def test_a_baseline_with_this_whole_digest_gives_the_tensors_digests_and_sums():
    hashed = weights_digest(_model()).result()
    recorded, sums = _other(hashed.tensors), {n: f"1.1.{i:032x}" for i, n in enumerate(hashed.tensors)}
    taken = weights_digest(_model(), (hashed.total, recorded, sums)).result()
    assert taken.total == hashed.total and taken.tensors == recorded and taken.sums == sums
    unsummed = weights_digest(_model(), (hashed.total, recorded, None)).result()  # recorded before sums were
    assert unsummed.tensors == recorded and unsummed.sums == hashed.sums


def test_other_weights_or_other_tensor_names_hash_every_tensor():
    hashed = weights_digest(_model()).result()
    recorded = _other(hashed.tensors)
    changed = _model()
    with torch.no_grad():
        changed[0].weight[0, 0] += 1e-3
    now = weights_digest(changed, (hashed.total, recorded, None)).result()
    assert now.total != hashed.total and now.tensors != recorded
    assert {n for n, d in now.tensors.items() if d != hashed.tensors[n]} == {"0.weight"}
    fewer = {n: d for n, d in recorded.items() if n != "1.num_batches_tracked"}
    assert weights_digest(_model(), (hashed.total, fewer, None)).result().tensors == hashed.tensors


@pytest.mark.parametrize("policy, takes", [
    (ReusePolicy(None), True),
    (ReusePolicy.for_check(full=True), False),
    (ReusePolicy.for_update(), False),
])
def test_only_a_command_that_reads_takes_the_baselines_digests(policy, takes):
    hashed = weights_digest(_model()).result()
    b = baseline()
    b = dataclasses.replace(b, meta=dataclasses.replace(b.meta, weights_digest=hashed.total,
                                                        tensor_digests=dict(hashed.tensors),
                                                        tensor_sums=dict(hashed.sums)))
    assert policy.plan(b).known_weights() == ((hashed.total, hashed.tensors, hashed.sums) if takes else None)
    assert policy.plan(None).known_weights() is None
    without = dataclasses.replace(b, meta=dataclasses.replace(b.meta, tensor_digests=None))
    assert policy.plan(without).known_weights() is None
