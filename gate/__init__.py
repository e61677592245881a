"""parity-gate: a CI gate for PyTorch models that ship through ONNX.

The library never imports typer or rich (that is ``gate.cli``), and imports torch only
where a model is exported or run on PyTorch.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
