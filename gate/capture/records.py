"""What a capture produces: one record per layer output, in execution order."""

from __future__ import annotations

from dataclasses import dataclass

from gate.fingerprint import Fingerprint

ROOT = "(model)"


@dataclass
class LayerOutput:
    name: str  # "layer1.0.conv1", "act#2", "attn[0]", "(model)[1]"
    module: str  # qualified module name ("" for the root)
    call: int  # 0-based call index of that module in one forward
    element: str  # "" or the tuple/dict suffix, e.g. "[0]"
    type: str  # module class name
    fp: Fingerprint
    alias_of: str | None = None  # an identity module: its output is this earlier layer's tensor


def layer_name(module: str, call: int, element: str = "") -> str:
    """The stable layer name: qualified name, ``#k`` for the k-th call (k >= 2), element suffix."""
    base = module if module else ROOT
    if call:
        base = f"{base}#{call + 1}"
    return base + element
