"""gate.commands.ahead: which provider may start beside the reference, decided before the model runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gate import env
from gate.commands import ahead as ahead_mod
from gate.commands.ahead import CAPTURE_COST, Ahead
from gate.config import ProviderSpec, load_config
from gate.errors import ConfigError
from gate.runners.isolation import Spare

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def spare():
    s = Spare()
    yield s
    s.close()


@pytest.fixture
def config():
    return load_config(ROOT / "pyproject.toml")


def of(config, spare, providers=("torch-cpu", "CPUExecutionProvider"), timed=False, threads=None, spec=None):
    specs = tuple(ProviderSpec(p) for p in providers)
    spec = spec or config.models[0]
    return Ahead.of(specs, config, spec, Path("/tmp/b"), spare, threads, timed, lambda _: None)


def test_on_the_first_isolated_onnx_runtime_provider_with_one_thread_less(monkeypatch, config, spare):
    monkeypatch.setenv(env.AHEAD, "on")
    ahead = of(config, spare, ("torch-cpu", "CPUExecutionProvider"), threads=4)
    assert ahead is not None and ahead.provider.name == "CPUExecutionProvider" and ahead.ahead == 3
    assert of(config, spare, threads=1).ahead == 1  # never none


def test_none_where_it_is_off_timed_repeated_alone_or_without_a_worker(monkeypatch, config, spare):
    monkeypatch.setenv(env.AHEAD, "on")
    assert of(config, spare, timed=True) is None  # a latency is read: its runs keep their threads
    assert of(config, spare, spec=replace(config.models[0], repeats=3)) is None
    assert of(config, spare, ("torch-cpu",)) is None
    assert of(config, None) is None  # no spare: no ONNX Runtime provider in a worker
    assert of(config, spare, ("torch-cuda", "CPUExecutionProvider")) is None  # the first worker is torch's
    monkeypatch.setenv(env.AHEAD, "off")
    assert of(config, spare) is None


def test_a_wrong_mode_is_refused_naming_it(monkeypatch, config, spare):
    monkeypatch.setenv(env.AHEAD, "sometimes")
    with pytest.raises(ConfigError, match=r"PARITY_GATE_AHEAD='sometimes': expected one of auto, on, off"):
        of(config, spare)


def test_auto_goes_ahead_from_its_cpus_after_a_trace_not_after_a_binding_and_on_after_both(
        monkeypatch, config, spare):
    monkeypatch.setenv(env.AHEAD, "auto")
    monkeypatch.setattr(ahead_mod, "cpus", lambda: ahead_mod.AUTO_CPUS - 1)
    assert of(config, spare) is None
    monkeypatch.setattr(ahead_mod, "cpus", lambda: ahead_mod.AUTO_CPUS)
    ahead = of(config, spare)
    assert ahead is not None and ahead.may(binding=False) and not ahead.may(binding=True)
    assert ahead.cost(2.0, binding=True) == 0.0 and ahead.cost(2.0, binding=False) == 2.0 * CAPTURE_COST
    monkeypatch.setenv(env.AHEAD, "on")
    assert of(config, spare).may(binding=True)


def test_it_goes_ahead_only_where_the_memory_available_holds_its_session_and_capture(
        monkeypatch, config, spare):
    from gate.model import budget

    monkeypatch.setenv(env.AHEAD, "on")
    ahead = of(config, spare)
    available = budget.available_mb()
    assert available is not None
    room = (available - budget.FIXED_MB) * budget.MB - config.isolation.capture_mb * 2**20
    assert ahead.fits(int(room / 2) - 2**20)
    assert not ahead.fits(int(room / 2) + 2**30)
