"""parity-gate: a CI gate for PyTorch models that ship through ONNX.

``gate.fingerprint(array)`` fingerprints an array; ``gate.backend`` says which implementation does it
("native" or "numpy"). Both load on first use, so a bad PARITY_GATE_BACKEND surfaces as the CLI's
one-line error. The library never imports typer or rich (``gate.cli``), and torch only where it runs."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "backend", "fingerprint"]


def __getattr__(name: str) -> Any:  # gate.fingerprint (a module) or its backend (str)
    if name in ("fingerprint", "backend"):
        import importlib

        module = importlib.import_module("gate.fingerprint")  # also binds gate.fingerprint
        return module if name == "fingerprint" else module.backend
    raise AttributeError(f"module 'gate' has no attribute {name!r}")
