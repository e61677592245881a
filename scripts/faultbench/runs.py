"""The gate's runs for the benchmark: a config per case, baselines recorded in this process or in
another one (with other thread counts), ``check`` in-process, and the export -> collect -> report
matrix for an EP that lives in its own environment (OpenVINO)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

SCRIPTS = Path(__file__).resolve().parents[1]
ROOT = SCRIPTS.parent
OV = "OpenVINOExecutionProvider"
_DEFAULT_THREADS = torch.get_num_threads()


@dataclass(frozen=True)
class Case:
    model: str  # the benchmark's model key
    kind: str = "base"  # the factory's kind
    inputs: str = ""
    transform: str | None = None
    baselines: str = "baselines"
    ov_options: dict | None = None  # with OpenVINO as a third provider, and these EP options
    tag: str = field(default="")
    artifact: str | None = None  # a prebuilt ONNX file, relative to the benchmark's folder

    @property
    def name(self) -> str:
        return self.model.replace("_", "-")

    def config(self, folder: Path) -> Path:
        providers = '"torch-cpu", "CPUExecutionProvider"'
        if self.ov_options is not None:
            providers += f', {{ name = "{OV}", options = {_toml(self.ov_options)} }}'
        text = (f'baseline-dir = "{self.baselines}"\nproviders = [{providers}]\n\n[[models]]\n'
                f'name = "{self.name}"\nfactory = "faultbench.factories:{self.model}__{self.kind}"\n'
                f'inputs = {self.inputs}\n')
        if self.transform:
            text += f'transform = "faultbench.factories:{self.transform}"\n'
        if self.artifact:
            text += f'artifact = "{self.artifact}"\n'
        path = folder / f"{self.tag or self.kind}-{self.model}.toml"
        path.write_text(text)
        return path


def _toml(d: dict) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in d.items()) + " }"


class _Threads:
    """PARITY_GATE_THREADS for one run, restored after (torch keeps its own setting)."""

    def __init__(self, threads: int | None):
        self.threads, self.old = threads, os.environ.get("PARITY_GATE_THREADS")

    def __enter__(self):
        if self.threads:
            os.environ["PARITY_GATE_THREADS"] = str(self.threads)

    def __exit__(self, *_exc):
        if self.threads:
            if self.old is None:
                os.environ.pop("PARITY_GATE_THREADS", None)
            else:
                os.environ["PARITY_GATE_THREADS"] = self.old
            torch.set_num_threads(int(self.old) if self.old else _DEFAULT_THREADS)


def env(threads: int | None = None) -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(SCRIPTS)])}
    if threads:
        out["PARITY_GATE_THREADS"] = str(threads)
    return out


def record(folder: Path, case: Case, other_process: bool = False, threads: int | None = None) -> float:
    """Write the case's baseline; in another Python process when ``other_process``."""
    path = case.config(folder)
    t0 = time.perf_counter()
    if other_process:
        proc = subprocess.run([sys.executable, "-m", "gate.cli", "update-baseline", "--config", str(path)],
                              env=env(threads), capture_output=True, text=True, cwd=folder)
        if proc.returncode != 0:
            raise RuntimeError(f"update-baseline in another process failed: {proc.stderr.strip()[-400:]}")
    else:
        from gate import commands
        from gate.config import load_config

        cfg = load_config(path)
        with _Threads(threads):
            commands.update_baseline(cfg, cfg.models, cfg.providers)
    return time.perf_counter() - t0


def check(folder: Path, case: Case, threads: int | None = None, full: bool = False) -> tuple[dict, float]:
    """``check`` in-process: the default path (each stage from its key where the store allows), or
    ``full`` (every stage computed)."""
    from gate import commands
    from gate.config import load_config

    cfg = load_config(case.config(folder))
    t0 = time.perf_counter()
    with _Threads(threads):
        report = commands.check(cfg, cfg.models, cfg.providers, full=full).to_dict()
    return report, time.perf_counter() - t0


def openvino_python() -> str | None:
    """The onnxruntime-openvino environment (scripts/test.sh builds it), or None."""
    for candidate in (os.environ.get("PARITY_GATE_OPENVINO_PYTHON"), str(ROOT / ".venv-openvino" / "bin" / "python")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def matrix(folder: Path, case: Case, export: Path, record_baseline: bool) -> tuple[dict, float]:
    """export (once) -> collect on the CPU EP here and on OpenVINO in its environment -> report
    (after ``update-baseline`` from those files when ``record_baseline``)."""
    from gate import commands
    from gate.config import load_config

    cfg = load_config(case.config(folder))
    t0 = time.perf_counter()
    if not export.exists():
        commands.export_models(cfg, cfg.models, cfg.select_providers(["torch-cpu"]), export)
        commands.collect(export, cfg.select_providers(["CPUExecutionProvider"]), export.with_suffix(".cpu.msgpack.zst"))
    ov_out = folder / f"{case.tag or case.kind}-{case.model}.ov.msgpack.zst"
    proc = subprocess.run([openvino_python(), "-m", "gate.cli", "collect", "--from", str(export), "--provider", OV,
                           "--config", str(case.config(folder)), "--out", str(ov_out)],
                          env=env(), capture_output=True, text=True, cwd=folder)
    if proc.returncode != 0:
        raise RuntimeError(f"collect on {OV} failed: {proc.stderr.strip()[-400:]}")
    sources = [export, export.with_suffix(".cpu.msgpack.zst"), ov_out]
    if record_baseline:
        commands.update_baseline(cfg, cfg.models, (), sources=sources)
    report = commands.report_files(cfg, sources).to_dict()
    return report, time.perf_counter() - t0
