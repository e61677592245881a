"""A small project for the stage tests (tests/e2e/test_reuse.py, test_stages.py): the model of
``tests/e2e/reuse_models.py`` and the transforms of ``reuse_transforms.py`` copied into a folder with
its config, and the calls and report readers those tests share."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import torch

from gate import commands
from gate.config import load_config

E2E = Path(__file__).resolve().parents[1] / "e2e"
MODEL = '[[models]]\nname = "net"\nfactory = "reuse_models:net"\ninputs = [{ name = "x", shape = [2, 3, 8, 8] }]\n'
FULL = "float64 reference on torch-cpu"
EXPORTING = "exporting to ONNX"


def project(tmp: Path, extra: str = "", model: str = MODEL) -> Path:
    for name in ("reuse_models.py", "reuse_transforms.py"):
        shutil.copy(E2E / name, tmp / name)
    path = tmp / "parity-gate.toml"
    path.write_text(f'baseline-dir = "b"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n{model}{extra}')
    return path


def update(path: Path) -> list[str]:
    said: list[str] = []
    cfg = load_config(path)
    commands.update_baseline(cfg, cfg.models, cfg.providers, said.append)
    return said


def check(path: Path, **kw) -> tuple[dict, list[str]]:
    said: list[str] = []
    cfg = load_config(path)
    return commands.check(cfg, cfg.models, cfg.providers, said.append, **kw).to_dict(), said


def reuse_of(report: dict, model: int = 0) -> dict:
    return report["models"][model]["reuse"]


def states(report: dict, model: int = 0) -> dict[str, str]:
    """Stage -> where its output came from (``hit``: the store or the baseline; else computed, and why)."""
    return {s["stage"]: s["state"] for s in reuse_of(report, model)["stages"]}


def stage_key(report: dict, stage: str) -> str:
    return next(s["key"] for s in reuse_of(report)["stages"] if s["stage"] == stage)


def first(report: dict) -> tuple[str, str] | None:
    fr = report["first_regression"]
    return None if fr is None else (fr["provider"], fr["layer"])


def runtimes(report: dict) -> dict[str, dict]:
    return {p["name"]: p for p in report["models"][0]["providers"] if p["role"] == "runtime"}


def weights(tmp: Path, monkeypatch, **changed: float) -> None:
    """The model's tensors as the gate builds them (under the model's seed, 0), ``name`` scaled by its
    factor (``shift`` set to it), in the file ``REUSE_TEST_WEIGHTS`` names."""
    from reuse_models import net

    monkeypatch.delenv("REUSE_TEST_WEIGHTS", raising=False)  # the gate's own tensors, not a file set before
    torch.manual_seed(0)
    model = net()
    state = {n: t.detach().numpy().copy() for n, t in [*model.named_parameters(), *model.named_buffers()]}
    for name, factor in changed.items():
        state[name] = state[name] * factor if name != "shift" else np.full_like(state[name], factor)
    np.savez(tmp / "weights.npz", **state)
    monkeypatch.setenv("REUSE_TEST_WEIGHTS", str(tmp / "weights.npz"))
