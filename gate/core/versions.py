"""Versions of parity-gate and the runtimes whose numbers it records."""

from __future__ import annotations

import platform
from importlib import metadata

import gate

# ONNX Runtime ships as one of these distributions (never two in one environment).
ORT_DISTRIBUTIONS = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino")


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"parity_gate": gate.__version__}
    for dist in ("torch", "onnx", "onnxscript"):
        out[dist] = version(dist)
    out["onnxruntime"] = next((v for v in map(version, ORT_DISTRIBUTIONS) if v), None)
    return out


def environment(backend: str) -> dict[str, str | None]:
    """What the report's ``environment`` records."""
    v = versions()
    return {"parity_gate": v["parity_gate"], "torch": v["torch"], "onnx": v["onnx"], "onnxruntime": v["onnxruntime"],
            "python": platform.python_version(), "platform": f"{platform.system()}-{platform.machine()}",
            "backend": backend}
