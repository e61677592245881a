"""Which re-expressed weights only moved (gate.core.reexpressed): value sums of real tensors
(gate.model.weights.value_sums), grouped by the modules around them. A split, a merge, a rename or an exact
upcast keeps the total; a value changed in any of them does not; a fold computes new values (its count
changes); a side without sums leaves every group computed, as before sums were recorded."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from gate.core.reexpressed import classify
from gate.model.weights import SUM_CHUNK, value_sums

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
    assert lost.changed == {"model.mlp.0.bias", "mlp.0.bias"}  # renamed, and lowered to float16: changed


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
    total = [sum(int(s.split(".")[2][k:k + 16], 16) for s in (first, rest)) % 2**64 for k in (0, 16)]
    assert whole == f"{array.size}.{np.count_nonzero(array)}.{total[0]:016x}{total[1]:016x}"
    if dtype.is_floating_point:  # the value, not its storage: float32 holding the same numbers sums the same
        assert value_sums(t.float().numpy(), torch.float32) == whole


def _nudged(a: np.ndarray) -> np.ndarray:
    out = a.copy()
    out.flat[0] = np.nextafter(out.flat[0], np.float32(np.inf))
    return out


SPLIT = {"split.weight", "split.a.weight", "split.b.weight", "split.a.bias", "split.b.bias"}


@pytest.mark.parametrize("fault, changed", [(None, set()),
                                            ("layers.1.weight", {"dec.0.weight", "layers.1.weight"}),
                                            ("head.0.weight", {"fc1.weight", "head.0.weight"}),
                                            ("split.b.weight", SPLIT)])
def test_modules_moved_between_containers_pair_off_and_a_fold_elsewhere_excuses_none_of_them(fault, changed):
    """Encoder and decoder flattened into one Sequential, a top-level Linear wrapped, a bias-less Linear
    split into halves that gained zero biases, beside a BatchNorm folded into its conv: the fold alone
    computed new values. Every other tensor pairs off by its values: one value changed makes its pair, or
    its group, a weight change."""
    C = RNG.standard_normal(4).astype(np.float32)
    before = sums(enc__0__weight=W, dec__0__weight=W * 2, fc1__weight=W * 3, fc1__bias=B, split__weight=W * 4,
                  stem__conv__weight=W * 5, stem__bn__weight=C, stem__bn__bias=C * 2,
                  stem__bn__running_mean=C * 3, stem__bn__running_var=C * 4)
    parts = {"layers.0.weight": W, "layers.1.weight": W * 2, "head.0.weight": W * 3, "head.0.bias": B,
             "split.a.weight": (W * 4)[:3], "split.b.weight": (W * 4)[3:],
             "split.a.bias": np.zeros(3, np.float32), "split.b.bias": np.zeros(3, np.float32),
             "stem.conv.weight": W * 5.5, "stem.conv.bias": C * 5}
    if fault:
        parts[fault] = _nudged(parts[fault])
    now = sums(**{n.replace(".", "__"): v for n, v in parts.items()})
    re = _classify(now, before)
    fold = {"stem.conv.weight", "stem.conv.bias", *(f"stem.bn.{k}" for k in ("weight", "bias", "running_mean",
                                                                            "running_var"))}
    assert re.computed == fold
    assert re.changed == changed
    assert re.moved == (set(now) | set(before)) - fold - changed


@pytest.mark.parametrize("fault", [False, True])
def test_a_top_level_linear_split_into_siblings_is_judged_as_one(fault):
    b = (W * 2)[3:]
    now = sums(fc_a__weight=(W * 2)[:3], fc_b__weight=_nudged(b) if fault else b, head__weight=W[:2])
    re = _classify(now, sums(fc__weight=W * 2, head__weight=W[:2]))
    split = {"fc.weight", "fc_a.weight", "fc_b.weight"}
    assert (re.changed, re.moved, re.computed) == ((split, set(), set()) if fault else (set(), split, set()))


def test_a_rename_that_pruned_one_weight_to_zero_is_a_weight_change_not_a_fold():
    """As many values as before, one fewer nonzero: the group balances by its size, so the pruned value is a
    weight change, never values computed anew. Twin: the rename alone only moved."""
    pruned = (W * 3).copy()
    pruned.flat[5] = 0.0
    before = sums(fc3__weight=W * 3, head__weight=W[:2])
    renamed = _classify(sums(proj__weight=W * 3, head__weight=W[:2]), before)
    assert renamed.moved == {"fc3.weight", "proj.weight"}
    re = _classify(sums(proj__weight=pruned, head__weight=W[:2]), before)
    assert re.changed == {"fc3.weight", "proj.weight"} and not re.computed

