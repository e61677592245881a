"""PyTorch runtimes as providers: eager in other precisions, torch.compile (inductor), and
the CUDA paths, which on a machine without a GPU must be explicit skips, never a silent pass."""

from __future__ import annotations

from pathlib import Path

from gate import commands
from gate.config import load_config


def config(tmp_path: Path, providers: str, extra: str = "") -> Path:
    (tmp_path / "mlp_models.py").write_text(
        "from torch import nn\n\n"
        "def mlp():\n"
        "    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8), nn.LayerNorm(8))\n")
    path = tmp_path / "parity-gate.toml"
    path.write_text(f'providers = {providers}\n{extra}\n[[models]]\nname = "mlp"\nfactory = "mlp_models:mlp"\n'
                    'inputs = [{ name = "x", shape = [4, 16] }]\n')
    return path


def test_compile_and_bfloat16_providers_baseline_and_pass(tmp_path):
    cfg = load_config(config(tmp_path, '["torch-compile", { name = "torch-cpu", precision = "bfloat16" }]'))
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    assert report["verdict"] == "pass", report["first_regression"]
    providers = report["models"][0]["providers"]
    compiled = next(p for p in providers if p["name"] == "torch-compile")
    rows = {r["layer"]: r for r in compiled["layers"]}
    assert rows["(model)"]["status"] == "pass" and rows["(model)"]["value"] < 1e-5
    assert rows["0"]["status"] == "absent"  # inside the compiled graph: not observable, and said so
    bf16 = next(p for p in providers if p["precision"] == "bfloat16")
    assert bf16["device"].endswith(":bfloat16") and bf16["checked"] == 5
    # bfloat16 rounding is ~1e-3 relative: far over the float32 floor, inside its own default budget.
    assert 1e-4 < max(r["value"] for r in bf16["layers"]) < 0.2


def test_cuda_providers_are_explicit_skips_without_a_gpu_when_allowed(tmp_path):
    cfg = load_config(config(tmp_path, '["torch-cpu", "torch-cuda", "CUDAExecutionProvider"]',
                             extra="allow-missing-gpu = true"))
    commands.update_baseline(cfg, cfg.models, cfg.select_providers(["torch-cpu"]))
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    assert report["verdict"] == "pass"
    skipped = {p["name"]: p["reason"] for p in report["models"][0]["providers"] if p["status"] == "skipped"}
    assert skipped == {"torch-cuda": "skipped: torch-cuda not available here (no CUDA device)",
                       "CUDAExecutionProvider": "skipped: CUDAExecutionProvider not available here"}


def test_required_provider_missing_fails(tmp_path):
    cfg = load_config(config(tmp_path, '["torch-cpu", "cuda"]', extra='require = ["CUDAExecutionProvider"]'))
    commands.update_baseline(cfg, cfg.models, cfg.select_providers(["torch-cpu"]))
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    assert report["verdict"] == "error"
    cuda = next(p for p in report["models"][0]["providers"] if p["name"] == "CUDAExecutionProvider")
    assert cuda["status"] == "error" and "required" in cuda["reason"]


def test_a_gpu_leg_that_checks_nothing_fails_with_the_fix(tmp_path):
    path = config(tmp_path, '["torch-cpu", "torch-cuda", "CUDAExecutionProvider"]')
    cfg = load_config(path)
    commands.update_baseline(cfg, cfg.models, cfg.select_providers(["torch-cpu"]))
    report = commands.check(cfg, cfg.models, cfg.providers)
    assert (report.verdict, report.exit_code) == ("error", 3)
    gpu = {p.name: (p.status, p.error_status) for p in report.models[0].providers if p.name != "torch-cpu"}
    assert gpu == {"torch-cuda": ("error", "NO_GPU"), "CUDAExecutionProvider": ("error", "NO_GPU")}
    # A job without a GPU that selects its CPU providers is unaffected.
    assert commands.check(cfg, cfg.models, cfg.select_providers(["torch-cpu"])).verdict == "pass"
