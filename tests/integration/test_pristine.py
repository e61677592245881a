"""Every PyTorch run starts from the model as built: what one run leaves in the model (a cache in a
dict or attribute, a buffer written in place, an attribute added) never reaches another, in
either direction between the float32 runs and the float64 reference."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from gate.config import ProviderSpec
from gate.config.types import InputSpec, ModelSpec
from gate.core.failure import ModelError
from gate.core.runs import ModelRun
from gate.model.build import build
from gate.runners.base import Subject, execute
from gate.runners.reference import run_reference
from gate.runners.torch_eager import TorchEagerRunner
from tests.e2e import stateful_models

ROOT = Path(__file__).resolve().parents[2]


def _built(factory: str):
    spec = ModelSpec(name="m", factory=f"tests.e2e.stateful_models:{factory}", inputs=(InputSpec("x", (2, 16)),))
    return build(spec, ROOT)


def _reference(built):
    return run_reference(built, lambda _: None)


def test_the_float32_runs_state_never_reaches_the_float64_reference():
    built = _built("table_cache")
    clean = _reference(_built("table_cache"))
    run = ModelRun("m", layers=[])
    torch_cpu = execute(TorchEagerRunner(ProviderSpec("torch-cpu")), Subject(run, built=built))
    assert torch_cpu.status == "ok", torch_cpu.reason
    ref = _reference(built)  # after a float32 run: its float32 table must not be read here
    assert ref.dtype == "float64" and not ref.notes.below
    assert [r.fp for r in ref.records] == [r.fp for r in clean.records]


def test_the_references_state_never_reaches_the_float32_run():
    built = _built("table_cache")
    ref = _reference(built)  # builds its table in float64
    assert ref.dtype == "float64"
    run = ModelRun("m", layers=[])
    torch_cpu = execute(TorchEagerRunner(ProviderSpec("torch-cpu")), Subject(run, built=built))
    assert torch_cpu.status == "ok", torch_cpu.reason


def test_restore_undoes_a_forwards_state_and_keeps_the_weights():
    built = _built("counts_calls")
    block = built.module.block
    weight, calls = block.lin.weight, block.calls
    with torch.no_grad():
        built.module(*built.inputs)
        built.module(*built.inputs)
    assert float(block.calls) == 2 and hasattr(block, "last")
    built.restore()
    assert float(block.calls) == 0 and not hasattr(block, "last")
    assert block.lin.weight is weight and block.calls is calls  # the same objects, nothing copied


def test_a_cache_in_a_plain_dict_is_emptied_and_not_shared():
    built = _built("bias_cache")
    with built.fresh(), torch.no_grad():
        built.module(*built.inputs)
        cached = built.module.block.ab
        assert list(cached) == ["cpu"]
    assert built.module.block.ab == {} and built.module.block.ab is not cached


def test_hooks_a_forward_installed_go_with_the_flag_it_set():
    """Both halves of a forward's setup are undone together: a flag in the module's attributes and the
    hooks it registered. Left half undone, every run installs the hooks once more."""
    built = _built("hooks_on_first_call")
    with built.fresh(), torch.no_grad():
        first = built.module(*built.inputs)
    for _ in range(2):
        with built.fresh(), torch.no_grad():
            again = built.module(*built.inputs)
        assert torch.equal(again, first)
    lin = built.module.block.lin
    assert len(lin._forward_hooks) == 1  # the factory's own hook stays


def test_a_forward_that_changes_its_weights_in_place_starts_every_run_from_the_weights_as_built():
    """As transformers' RWKV: the first eval forward halves a layer's weights and sets a flag. The weights
    as built come from the factory called again; every run starts from them, and the runs agree."""
    built = _built("rescales_once")
    lin = built.module.block.lin
    as_built = lin.weight.detach().clone()
    outputs = []
    for _ in range(3):
        with built.fresh(), torch.no_grad():
            outputs.append(built.module(*built.inputs))
            assert built.module.block.rescaled and torch.equal(lin.weight, as_built / 2)
        assert not built.module.block.rescaled and torch.equal(lin.weight, as_built)
    assert lin.weight is built.module.block.lin.weight  # the same parameter, its values put back
    assert all(torch.allclose(o, outputs[0], rtol=1e-6, atol=0) for o in outputs)
    assert built.weights_digest == _built("rescales_once").weights_digest  # hashed from the weights as built


def test_runs_from_the_same_state_that_differ_are_refused():
    built = _built("drifts_every_run")
    with pytest.raises(ModelError, match=r"model `m`: its forward changes `block\.lin\.weight` in place, "
                                         r"and two runs from the state it was built in differ \(output 0 by "):
        with built.fresh(), torch.no_grad():
            built.module(*built.inputs)


def test_a_forward_whose_second_call_differs_from_its_first_is_refused():
    """Runs from the state as built agree, yet the weights it leaves behind change the next call: what a
    deployment's second request gets is not what the gate compared."""
    built = _built("decays_after_use")
    with pytest.raises(ModelError, match=r"model `m`: its forward changes `block\.lin\.weight` in "
                                         r"place, and a second call gives other outputs than the first "):
        with built.fresh(), torch.no_grad():
            built.module(*built.inputs)


@pytest.mark.parametrize(("factory", "changes"), [("half_table_cache", "`block.table`"),
                                                  ("counts_in_an_int", "`block.calls`"),
                                                  ("counts_in_a_list", "`block.calls` in place")])
def test_a_forward_whose_plain_attribute_makes_its_second_call_differ_is_refused(factory, changes):
    """State in a plain attribute (a float16 cache read from the second call on, a Python counter) is put back
    before every run, so each run is a first call: the second call after it is checked as for a buffer."""
    built = _built(factory)
    refused = rf"model `m`: its forward changes {re.escape(changes)}, and a second call gives other outputs "
    with pytest.raises(ModelError, match=refused + r"than the first \(output 0 by "):
        with built.fresh(), torch.no_grad():
            built.module(*built.inputs)


@pytest.mark.parametrize("factory", ["table_cache", "counts_harmlessly", "counts_harmlessly_in_a_list"])
def test_a_forward_whose_cache_or_counter_changes_nothing_it_returns_passes(factory):
    built = _built(factory)
    for _ in range(2):
        with built.fresh(), torch.no_grad():
            built.module(*built.inputs)


def test_a_forward_that_writes_a_buffer_after_using_it_is_refused_and_one_that_refills_it_is_not():
    """Running statistics updated in eval mode after their use: each run from the state as built agrees (the
    buffer is put back), a deployment's second request does not. Its twin writes its buffer wholly before
    reading it: every call agrees."""
    built = _built("buffer_after_use")
    with pytest.raises(ModelError, match=r"model `m`: its forward changes `block\.mean` in place, and a "
                                         r"second call gives other outputs than the first "):
        with built.fresh(), torch.no_grad():
            built.module(*built.inputs)
    refilled = _built("cache_refilled")
    for _ in range(2):
        with refilled.fresh(), torch.no_grad():
            refilled.module(*refilled.inputs)


def test_a_buffer_a_kernel_writes_without_moving_its_version_is_seen_and_put_back():
    """batch_norm's kernel in training mode updates running statistics and leaves their version counters:
    the values moved, so the buffer is put back after every run, and the model whose second call differs
    is refused as the Python-written one is (never a later run on another run's statistics)."""
    built = _built("kernel_statistics")
    block = built.module.block
    with pytest.raises(ModelError, match=r"model `m`: its forward changes `block\.(mean|var)` in place, and a "
                                         r"second call gives other outputs than the first "):
        with built.fresh(), torch.no_grad():
            built.module(*built.inputs)
    assert torch.equal(block.mean, torch.zeros(16)) and torch.equal(block.var, torch.ones(16))


def test_a_forward_that_changes_weights_a_factory_cannot_build_again_is_refused_by_name():
    built = _built("changes_its_weights_unseeded")
    with torch.no_grad():
        built.module(*built.inputs)
    with pytest.raises(ModelError, match=r"model `m`: its forward changed parameter `block\.lin\.weight` in place; "
                                         r"its factory builds other weights when called again \(`inp\.weight` differs\)"):
        built.restore()


def test_lazy_modules_get_their_parameters_once_before_any_run():
    built = _built("lazy")
    lazy = built.module.block
    assert lazy.lin.weight.shape == (16, 16) and lazy.norm.running_mean.shape == (16,)
    assert not any(isinstance(p, torch.nn.parameter.UninitializedParameter) for p in built.module.parameters())
    assert any(n.startswith("lazy modules given their parameters by one forward") for n in built.normalizations)
    again = _built("lazy")  # the same seed, the same parameters
    assert all(torch.equal(a, b) for a, b in zip(built.module.parameters(), again.module.parameters(), strict=True))
    with built.fresh(), torch.no_grad():
        first = built.module(*built.inputs)
    with built.fresh(), torch.no_grad():
        assert torch.allclose(built.module(*built.inputs), first, rtol=1e-6, atol=0)


def test_stateful_models_run_as_plain_modules():
    # The factories the e2e tests load by name exist and run.
    for factory in (stateful_models.bias_cache, stateful_models.table_cache, stateful_models.counts_calls):
        assert factory().eval()(torch.randn(2, 16)).shape == (2, 4)


def test_inputs_drawn_from_torchs_generator_follow_the_seed_not_the_factory():
    """An inputs function that draws from torch's global generator: a factory that draws more numbers (an
    unused head) gives the same inputs, so its refactor meets its baseline; another seed, others."""
    def built(factory: str, seed: int = 0):
        spec = ModelSpec(name="m", factory=f"tests.e2e.stateful_models:{factory}",
                         inputs="tests.e2e.stateful_models:drawn_inputs", seed=seed)
        return build(spec, ROOT)

    assert built("halves").inputs_digest == built("with_unused_head").inputs_digest
    assert built("halves").inputs_digest != built("halves", seed=1).inputs_digest
