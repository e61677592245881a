"""The model goes once nothing later in the command runs it (``prepare.Memo.drop_model``): its weights
are not held beside the ONNX Runtime worker's session. With real exports and a real worker."""

from __future__ import annotations

import gc
import sys
import textwrap

import pytest

from gate.config import load_config
from gate.core.status import RunStatus
from gate.pipeline.prepare import Memo
from gate.pipeline.run import run_model

FACTORY = textwrap.dedent("""
    import weakref
    import torch

    built = []  # weak references to the storages of every model built with real weights

    def model():
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
        if not next(m.parameters()).is_meta:  # the memory estimate builds it on the meta device first
            built.append([weakref.ref(p.untyped_storage()) for p in m.parameters()])
        return m
""")


@pytest.fixture
def config(tmp_path):
    name = f"letgo_{tmp_path.name.replace('-', '_')}"  # a module of its own per test: imported once
    (tmp_path / f"{name}.py").write_text(FACTORY)
    (tmp_path / "parity-gate.toml").write_text(textwrap.dedent(f"""
        providers = ["torch-cpu", "CPUExecutionProvider"]
        [[models]]
        name = "mlp"
        factory = "{name}:model"
        inputs = [{{ name = "x", shape = [2, 16] }}]
    """))
    yield load_config(tmp_path / "parity-gate.toml"), name
    sys.modules.pop(name, None)


def _held(name: str) -> list[bool]:
    gc.collect()
    return [any(ref() is not None for ref in model) for model in sys.modules[name].built]


def test_the_model_goes_before_the_onnx_runtime_providers_when_no_later_case_runs_it(config):
    cfg, name = config
    memo = Memo.of(cfg.models)
    run = run_model(cfg, cfg.models[0], cfg.providers, memo=memo)
    assert [p.status for p in run.providers] == [RunStatus.OK] * 2, [p.reason for p in run.providers]
    assert all(p.layers for p in run.providers)
    assert _held(name) == [False] and not memo.modules


def test_a_command_that_did_not_say_its_cases_keeps_the_model(config):
    cfg, name = config
    memo = Memo()
    run_model(cfg, cfg.models[0], cfg.providers, memo=memo)
    assert _held(name) == [True] and memo.modules


def test_the_model_stays_for_a_later_case_and_goes_with_the_last(config):
    cfg, name = config
    first = cfg.models[0]
    cases = (first, type(first)(**{**first.__dict__, "name": "mlp-again", "base": "mlp"}))
    memo = Memo.of(cases)
    run_model(cfg, cases[0], cfg.providers, memo=memo)
    assert _held(name) == [True]  # the second case runs the same instance
    run_model(cfg, cases[1], cfg.providers, memo=memo)
    assert _held(name) == [False] and not memo.modules
