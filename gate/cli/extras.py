"""What each command needs beyond the core install, and one clear error when it is missing: the core
(numpy, zstandard, msgpack, rich, typer, cffi) reads and writes every file, merges reports and
comments; running a model needs ``torch`` (``gpu``); running a graph without torch (``collect``)
needs onnx and one ONNX Runtime distribution (``ort``, ``ort-gpu``).
"""

from __future__ import annotations

import importlib.util

from gate.errors import GateError

TORCH_STACK = ("torch", "onnx", "onnxscript", "onnxruntime")
EXPORT_STACK = ("torch", "onnx", "onnxscript")  # export runs the reference and the torch providers only
ORT_STACK = ("onnx", "onnxruntime")

# What each command needs beyond the core install; a command not named needs nothing more.
# validate imports the models' factories, which import torch.
NEEDS = {"check": TORCH_STACK, "update-baseline": TORCH_STACK, "init": TORCH_STACK, "add": TORCH_STACK,
         "validate": TORCH_STACK, "export": EXPORT_STACK, "collect": ORT_STACK}

_INSTALL = {
    TORCH_STACK: "pip install 'parity-gate[torch]' (on a GPU runner: 'parity-gate[gpu]')",
    EXPORT_STACK: "pip install 'parity-gate[torch]'",
    ORT_STACK: "pip install 'parity-gate[ort]' (on a GPU runner: 'parity-gate[ort-gpu]'; or onnx and another "
               "ONNX Runtime build, e.g. onnxruntime-openvino)",
}


def missing(modules: tuple[str, ...]) -> list[str]:
    """The modules of ``modules`` that cannot be imported here (found without importing them)."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def require(command: str) -> None:
    modules = NEEDS.get(command, ())
    absent = missing(modules)
    if absent:
        how = _INSTALL.get(modules, "pip install " + " ".join(modules))
        raise GateError(f"`parity-gate {command}` needs {', '.join(modules)}; not installed here: "
                        f"{', '.join(absent)}. Install them: {how}")
