"""Which re-expressed weights only moved (gate.core.reexpressed): value sums of real tensors
(gate.model.build.value_sums), grouped by the modules around them. A split, a merge, a rename or an exact
upcast keeps the total; a value changed in any of them does not; a fold computes new values (its count
changes); a side without sums leaves every group computed, as before sums were recorded."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from gate.model.build import SUM_CHUNK, value_sums
from gate.core.reexpressed import classify

RNG = np.random.default_rng(0)
W = RNG.standard_normal((6, 4)).astype(np.float32)
B = RNG.standard_normal(6).astype(np.float32)


def sums(**tensors: np.ndarray) -> dict[str, str]:
    return {n.replace("__", "."): value_sums(a, torch.from_numpy(a).dtype) for n, a in tensors.items()}


def digests(values: dict[str, str]) -> dict[str, str]:
    """A digest per tensor standing in for its bytes' (equal values, equal digest; shapes are not told)."""
    return {n: hashlib.sha256(v.encode()).hexdigest()[:16] for n, v in values.items()}


BEFORE = sums(mlp__0__weight=W, mlp__0__bias=B, head__weight=W[:2])


def _classify(now: dict[str, str], before: dict[str, str] = BEFORE):
    return classify(digests(now), digests(before), now, before)


def test_a_split_into_stacked_halves_only_moved_values_and_a_changed_value_is_a_weight_change():
    halves = sums(mlp__0__a__weight=W[:3], mlp__0__b__weight=W[3:], mlp__0__a__bias=B[:3],
                  mlp__0__b__bias=B[3:], head__weight=W[:2])
    re = _classify(halves)
    assert re.moved == set(halves) - {"head.weight"} | {"mlp.0.weight", "mlp.0.bias"}
    assert not re.computed and not re.changed
    faulted = W[3:].copy()
    faulted[0, 0] = np.nextafter(faulted[0, 0], np.float32(np.inf))  # one value, one float32 step
    re = _classify({**halves, **sums(mlp__0__b__weight=faulted)})
    assert re.changed == set(halves) - {"head.weight"} | {"mlp.0.weight", "mlp.0.bias"}
    assert not re.moved and not re.computed


def test_a_rename_an_exact_upcast_and_a_merge_keep_their_total():
    renamed = sums(model__mlp__0__weight=W, model__mlp__0__bias=B.astype(np.float64),
                   model__head__weight=W[:2])
    assert _classify(renamed).moved == set(renamed) | set(BEFORE)
    merged = _classify(sums(mlp__0__weight=np.concatenate([W.reshape(-1), B]), head__weight=W[:2]))
    assert merged.moved == {"mlp.0.weight", "mlp.0.bias"} and not merged.changed and not merged.computed
    lost = _classify(sums(model__mlp__0__weight=W, model__mlp__0__bias=B.astype(np.float16),
                          model__head__weight=W[:2]))
    assert lost.changed == set(renamed) | set(BEFORE)  # a rename that lowered a precision changed values


def test_a_fold_computes_new_values_and_a_side_without_sums_leaves_every_group_computed():
    folded = sums(mlp__0__weight=W * 1.5, head__weight=W[:2])  # the bias folded into nothing: count changed
    assert _classify(folded).computed == {"mlp.0.weight", "mlp.0.bias"}
    halves = sums(mlp__0__a__weight=W[:3], mlp__0__b__weight=W[3:], mlp__0__bias=B, head__weight=W[:2])
    d_now, d_before = digests(halves), digests(BEFORE)
    split = {"mlp.0.weight", "mlp.0.a.weight", "mlp.0.b.weight"}
    assert classify(d_now, d_before, halves, None).computed == split
    assert classify(d_now, d_before, None, BEFORE).computed == split
    assert classify(d_now, d_before, halves, BEFORE).moved == split


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int64, torch.bool])
def test_value_sums_add_over_parts_in_every_dtype_and_past_one_chunk(dtype):
    t = torch.randn(SUM_CHUNK + 1000).mul(50).to(dtype)
    array = (t.view(torch.int16) if dtype == torch.bfloat16 else t).numpy()
    whole, first, rest = (value_sums(a, dtype) for a in (array, array[:777], array[777:]))
    total = [sum(int(s.partition(".")[2][k:k + 16], 16) for s in (first, rest)) % 2**64 for k in (0, 16)]
    assert whole == f"{array.size}.{total[0]:016x}{total[1]:016x}"
    if dtype.is_floating_point:  # the value, not its storage: float32 holding the same numbers sums the same
        assert value_sums(t.float().numpy(), torch.float32) == whole
