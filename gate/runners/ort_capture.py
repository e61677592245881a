"""Fingerprint the values an ONNX Runtime session produces where they are produced (no torch here).

``capture`` binds the outputs to the EP's device with IOBinding and copies each ``OrtValue`` to the
host to fingerprint it. Each value is dropped once fingerprinted, so a GPU EP never copies all its
intermediates to the host at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gate.config.providers import GPU_EPS
from gate.fingerprint import Fingerprint, fingerprint


def device_id(options: Mapping[str, Any]) -> int:
    """The EP's ``device_id`` option (ONNX Runtime takes it as a string or an integer)."""
    raw = str(options.get("device_id", 0)).strip()
    return int(raw) if raw.isdigit() else 0


def device_of(provider: str, options: Mapping[str, Any]) -> tuple[str, int]:
    where = GPU_EPS[provider].io_device if provider in GPU_EPS else "cpu"  # the others compute on the host
    return where, device_id(options)


@dataclass
class Capture:
    """Where outputs are bound."""

    device_type: str = "cpu"
    device_id: int = 0

    @classmethod
    def for_provider(cls, provider: str, options: Mapping[str, Any]) -> Capture:
        return cls(*device_of(provider, options))


def floating(a: np.ndarray) -> np.ndarray:
    return a if np.issubdtype(a.dtype, np.floating) else a.astype(np.float64)


def capture(session, feed: Mapping[str, np.ndarray], names: Sequence[str], how: Capture, keep: Sequence[str] = (),
            held: dict[str, np.ndarray] | None = None) -> dict[str, Fingerprint]:
    """Run ``session`` once with ``names`` bound to ``how``'s device; their fingerprints by name.
    ``keep`` is copied into ``held``, for a later session to read."""
    binding = session.io_binding()
    for name, value in feed.items():
        binding.bind_cpu_input(name, np.ascontiguousarray(value))
    bound = list(dict.fromkeys([*names, *keep]))
    for name in bound:
        binding.bind_output(name, how.device_type, how.device_id)
    session.run_with_iobinding(binding)
    values = list(binding.get_outputs())
    # Drop the binding rather than clear_binding_outputs(): with onnxruntime-openvino 1.24 the
    # clear corrupts the heap (glibc aborts at exit); the values keep their buffers alive.
    del binding
    wanted, kept = set(names), set(keep)
    out: dict[str, Fingerprint] = {}
    for i, name in enumerate(bound):
        if name in wanted:
            out[name] = fingerprint(floating(values[i].numpy()))
        if name in kept and held is not None:
            # A copy: an OrtValue from the binding keeps the binding, and with it the session and
            # every output of this run, alive. Values crossing a segment cut are small.
            held[name] = np.array(values[i].numpy())
        values[i] = None  # one bound value alive at a time beyond what ONNX Runtime still holds
    return out
