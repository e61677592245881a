"""gate.model.weights.weights_digest: every entry hashed (the whole digest is the sha256 of theirs), the
value sums taken from a baseline only for the tensors whose digest it recorded, and only by a command that
reads."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch

from gate.config.types import InputSpec, ModelSpec
from gate.core.failure import ModelError
from gate.core.status import ErrorStatus
from gate.model.build import build_module
from gate.model.weights import RULE, weights_digest
from gate.pipeline.stages import ReusePolicy
from tests.support.verdicts import baseline


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))


def _other(tensors: dict[str, str]) -> dict[str, str]:
    """Tensor digests no hash of these weights gives (what only a taken record can hold)."""
    return {name: f"{i:016x}" for i, name in enumerate(tensors)}


def test_the_whole_digest_is_the_sha256_of_each_entrys_sha256_in_name_order():
    model = _model()
    entries = sorted({**dict(model.named_parameters()), **dict(model.named_buffers())}.items())
    whole = hashlib.sha256(RULE)
    for name, t in entries:
        one = hashlib.sha256(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        one.update(np.ascontiguousarray(t.detach().numpy()).tobytes())
        whole.update(one.digest())
    digest = weights_digest(model).result()
    assert digest.total == whole.hexdigest()
    assert list(digest.tensors) == [name for name, _ in entries]


def test_a_baselines_tensor_digests_are_never_taken_and_its_sums_only_where_a_digest_is_the_recorded_one():
    hashed = weights_digest(_model()).result()
    sums = {n: f"1.1.{i:032x}" for i, n in enumerate(hashed.tensors)}
    other = weights_digest(_model(), (_other(hashed.tensors), sums)).result()
    assert other.total == hashed.total and other.tensors == hashed.tensors and other.sums == hashed.sums
    taken = weights_digest(_model(), (hashed.tensors, sums)).result()
    assert taken.tensors == hashed.tensors and taken.sums == sums
    unsummed = weights_digest(_model(), (hashed.tensors, None)).result()  # recorded before sums were
    assert unsummed.sums == hashed.sums


def test_other_weights_move_the_whole_digest_and_that_tensors_digest_only():
    hashed = weights_digest(_model()).result()
    changed = _model()
    with torch.no_grad():
        changed[0].weight[0, 0] += 1e-3
    now = weights_digest(changed, (hashed.tensors, None)).result()
    assert now.total != hashed.total
    assert {n for n, d in now.tensors.items() if d != hashed.tensors[n]} == {"0.weight"}


def test_a_weight_change_sums_the_tensors_it_changed_and_takes_the_others_sums_recorded():
    hashed = weights_digest(_model()).result()
    recorded = {n: f"1.1.{i:032x}" for i, n in enumerate(hashed.sums)}  # sums no tensor here has
    changed = _model()
    with torch.no_grad():
        changed[0].weight[0, 0] += 1e-3
    now = weights_digest(changed, (hashed.tensors, recorded)).result()
    fresh = weights_digest(changed).result().sums
    assert now.sums["0.weight"] == fresh["0.weight"] != hashed.sums["0.weight"]
    assert {n: s for n, s in now.sums.items() if n != "0.weight"} == \
        {n: s for n, s in recorded.items() if n != "0.weight"}
    assert list(now.sums) == list(hashed.sums)  # name order, as a full hash gives
    other = weights_digest(changed, (_other(hashed.tensors), recorded)).result()
    assert other.sums == fresh  # no digest recorded as now: every tensor summed


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
    assert policy.plan(b).known_weights() == ((hashed.tensors, hashed.sums) if takes else None)
    assert policy.plan(None).known_weights() is None
    without = dataclasses.replace(b, meta=dataclasses.replace(b.meta, tensor_digests=None))
    assert policy.plan(without).known_weights() is None


class _HeadOnly(torch.nn.Module):
    """A frozen backbone its ``state_dict()`` leaves out (only the head is saved)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.backbone, self.head = torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)

    def state_dict(self, *args, **kwargs):
        held = super().state_dict(*args, **kwargs)
        return type(held)((k, v) for k, v in held.items() if not k.startswith("backbone."))


def test_a_parameter_the_state_dict_leaves_out_is_in_the_digest():
    hashed = weights_digest(_HeadOnly()).result()
    changed = _HeadOnly()
    with torch.no_grad():
        changed.backbone.weight.mul_(1 + 1e-6)
    now = weights_digest(changed).result()
    assert now.total != hashed.total
    assert {n for n, d in now.tensors.items() if d != hashed.tensors[n]} == {"backbone.weight"}


class _Held(torch.nn.Module):
    """Tied weights, statistics, a non-persistent and a bfloat16 buffer: what ordinary models hold."""

    def __init__(self):
        super().__init__()
        self.embed, self.out = torch.nn.Embedding(5, 3), torch.nn.Linear(3, 5)
        self.norm = torch.nn.BatchNorm1d(3)
        self.out.weight = self.embed.weight
        self.register_buffer("inv_freq", torch.arange(3, dtype=torch.float32) / 7, persistent=False)
        self.register_buffer("scale", torch.arange(4, dtype=torch.bfloat16) / 3)
        with torch.no_grad():
            for i, (_, p) in enumerate(self.named_parameters()):
                p.copy_(torch.arange(p.numel(), dtype=p.dtype).reshape(p.shape) * (0.1 + i))


def test_an_ordinary_models_digest_is_the_one_its_baselines_recorded():
    # the tensors' digests are in baselines already written, and a diff compares them: never move them. The
    # whole digest moved once (``RULE``; v1, one stream, was 69df229d3eaa), with the tensors' the same.
    digest = weights_digest(_Held()).result()
    assert digest.total == "0bee11fc2b3d0c5417124a847a2d40ee2c4bc377edd502208df4c6c8e52beeb8"
    tied = digest.tensors["embed.weight"], digest.tensors["out.weight"]
    assert tied == ("11983553560e2724", "9ae616071f9fb0a4")
    assert digest.tensors["inv_freq"] == "f90a9660d40c964e" and len(digest.tensors) == 10
    assert digest.sums["scale"] == "4.3.bfaac00000000000c473f9839100cc0d"


class _Attributes(torch.nn.Module):
    """Tensors held as plain attributes: a table in a child module, and an alias of a buffer."""

    def __init__(self, scale: float = 1.0):
        super().__init__()
        torch.manual_seed(0)
        self.inner = torch.nn.Linear(3, 3)
        self.inner.table = torch.linspace(0.5, 1.5, 3) * scale
        self.register_buffer("mask", torch.ones(3))
        self.alias = self.mask  # the buffer again: named once, as the buffer


def test_a_tensor_held_as_a_plain_attribute_is_data_named_by_its_path():
    digest = weights_digest(_Attributes()).result()
    assert set(digest.tensors) == {"inner.weight", "inner.bias", "inner.table", "mask"}
    assert _changed(_Attributes(), _Attributes(1 + 1e-6)) == {"inner.table"}


class _Noted(torch.nn.Linear):
    """A Linear that saves its settings beside its weights (``nn.Module.get_extra_state``)."""

    def __init__(self, note: object):
        super().__init__(4, 3)
        self.note = note

    def get_extra_state(self):
        return self.note

    def set_extra_state(self, state):
        self.note = state


def _quantized(scale: float) -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    with torch.no_grad():
        model[0].weight.copy_(torch.arange(12.0).reshape(3, 4) * scale)
    return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def _changed(a: torch.nn.Module, b: torch.nn.Module) -> set[str]:
    one, two = weights_digest(a).result(), weights_digest(b).result()
    return {n for n, d in one.tensors.items() if two.tensors[n] != d}


def test_state_that_is_no_tensor_is_digested_by_its_values():
    torch.manual_seed(0)
    noted = _Noted({"version": 2, "bins": [0.5, 1.0], "table": torch.arange(3)})
    again = _Noted({"version": 2, "bins": [0.5, 1.0], "table": torch.arange(3)})
    again.load_state_dict(noted.state_dict())
    assert _changed(noted, again) == set()
    again.note = {"version": 2, "bins": [0.5, 1.0 + 1e-9], "table": torch.arange(3)}
    assert _changed(noted, again) == {"_extra_state"}
    assert _changed(_quantized(0.1), _quantized(0.1)) == set()
    assert _changed(_quantized(0.1), _quantized(0.2)) == {"0._packed_params._packed_params"}
    eight = torch.nn.Module()
    eight.register_buffer("w", torch.arange(4.0).to(torch.float8_e4m3fn))  # a dtype NumPy lacks
    assert weights_digest(eight).result().sums["w"].startswith("4.3.")


class _Opaque:
    pass


def opaque() -> torch.nn.Module:
    return _Noted({"calibration": _Opaque()})


def test_state_without_stable_bytes_fails_its_model_naming_the_entry():
    spec = ModelSpec(name="m", factory="tests.integration.test_weights_digest:opaque",
                     inputs=(InputSpec("x", (2, 4), "float32"),), where="models[1]")
    with pytest.raises(ModelError) as caught:
        build_module(spec, Path(__file__).resolve().parents[2])
    assert caught.value.error_status == ErrorStatus.BUILD_FAIL
    assert str(caught.value) == "model `m`: its state dict entry `_extra_state` holds a `_Opaque`, which " \
        "has no bytes the same in every process to digest: keep tensors, arrays, numbers, strings, " \
        "and lists, tuples and dicts of them there"
