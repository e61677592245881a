"""Run ONNX Runtime providers on an exported model and record what they produce.

Works on a *bundle*: the folder ``export`` writes per model (``model.onnx``, ``inputs.npz``,
``run.msgpack.zst`` with the reference fingerprints and the layer -> ONNX value map). The
same code serves ``check`` (a bundle in a temporary folder) and ``collect --from DIR`` on a
runner that has no torch: a GPU runner tests exactly the ONNX file the CPU job exported.
Each provider runs in a worker process (``gate.worker``) with a timeout and a memory budget.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import msgpack
import numpy as np

from gate.config import Isolation, ProviderSpec
from gate.fingerprint import Fingerprint
from gate.runs import ModelRun, ProviderLayer, ProviderRun, error_against

MODEL, INPUTS, RUN = "model.onnx", "inputs.npz", "run.msgpack.zst"


def write_bundle(folder: Path, proto_bytes: bytes, inputs: list[np.ndarray]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MODEL).write_bytes(proto_bytes)
    np.savez(folder / INPUTS, **{f"arg{i}": a for i, a in enumerate(inputs)})


def value_bytes(run: ModelRun) -> dict[str, int]:
    """Bytes each marked value will occupy, from the reference's element counts (float32)."""
    counts = {x.name: x.fp.count for x in run.layers}
    out: dict[str, int] = {}
    for layer, (kind, ref, _reason) in run.onnx_map.items():
        if kind == "value" and isinstance(ref, str):
            out[ref] = max(out.get(ref, 0), 4 * counts.get(layer, 0))
    return out


def run_provider(bundle: Path, run: ModelRun, provider: ProviderSpec, device: str,
                 isolation: Isolation | None = None, threads: int | None = None) -> ProviderRun:
    """One ORT provider on the bundle; failures become statuses, never exceptions."""
    isolation = isolation or Isolation()
    prun = ProviderRun(provider.name, provider.precision,
                       device if provider.precision == "float32" else f"{device}:{provider.precision}")
    values = [ref for kind, ref, _ in run.onnx_map.values() if kind == "value"]
    job = {"model": str(bundle / MODEL), "inputs": str(bundle / INPUTS), "provider": provider.name,
           "options": dict(provider.options), "values": list(dict.fromkeys(values)), "what": f"model `{run.name}`",
           "threads": threads, "memory_mb": isolation.memory_mb,
           "capture_bytes": isolation.capture_mb * 1024 * 1024 if isolation.capture_mb else None,
           "value_bytes": value_bytes(run)}
    out = _isolated(job, isolation) if isolation.enabled else _in_process(job)
    if out["status"] != "ok":
        prun.status, prun.error_status, prun.reason = "error", out["status"], out["message"]
        return prun
    prun.latency_ms, prun.placement = out["latency_ms"], out["placement"]
    prun.capture_peak_bytes = out.get("peak_capture_bytes")
    outputs = [Fingerprint.from_dict(d) for d in out["outputs"]]
    fps = {k: Fingerprint.from_dict(d) for k, d in out["values"].items()}
    for layer in run.layers:
        kind, ref, reason = run.onnx_map.get(layer.name, ("absent", None, "not mapped"))
        if kind in ("folded", "absent"):
            prun.layers[layer.name] = ProviderLayer(kind, reason=reason)
            continue
        fp = outputs[ref] if kind == "output" and isinstance(ref, int) and ref < len(outputs) else fps.get(ref)
        if fp is None:
            prun.layers[layer.name] = ProviderLayer("absent", reason="value not returned")
            continue
        prun.layers[layer.name] = ProviderLayer("ok", fp, error_against(fp, layer.fp))
    return prun


def _in_process(job: dict) -> dict:
    from gate.worker import execute

    return execute(job)


def _isolated(job: dict, isolation: Isolation) -> dict:
    with tempfile.TemporaryDirectory(prefix="parity-gate-worker-") as tmp:
        job = {**job, "out": str(Path(tmp) / "result.msgpack")}
        job_path = Path(tmp) / "job.msgpack"
        job_path.write_bytes(msgpack.packb(job, use_bin_type=True))
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        proc = subprocess.Popen([sys.executable, "-m", "gate.worker", str(job_path)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        what = f"{job['what']}: {job['provider']}"
        try:
            _, stderr = proc.communicate(timeout=isolation.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"status": "TIMEOUT", "message": f"{what} did not finish within {isolation.timeout_s:g} s"}
        result = Path(job["out"])
        if proc.returncode == 0 and result.is_file():
            return msgpack.unpackb(result.read_bytes(), raw=False)
        tail = stderr.decode(errors="replace").strip().splitlines()[-1:] if stderr else []
        if proc.returncode < 0:
            sig = signal.Signals(-proc.returncode).name
            cause = " (out of memory?)" if sig == "SIGKILL" else ""
            return {"status": "CRASH", "message": f"{what} crashed: worker killed by {sig}{cause}"}
        if any("MemoryError" in t or "bad_alloc" in t for t in tail):
            return {"status": "CRASH", "message": f"{what} ran out of memory (budget {isolation.memory_mb} MiB)"}
        return {"status": "CRASH", "message": f"{what} crashed: worker exited with {proc.returncode}"
                + (f" ({tail[0][:200]})" if tail else "")}
