"""Settings read from the environment, each parsed by one rule."""

from __future__ import annotations

import os

from gate.errors import ConfigError

THREADS = "PARITY_GATE_THREADS"


def threads(environ: dict[str, str] | None = None) -> int | None:
    """PARITY_GATE_THREADS: intra-op threads of torch, ONNX Runtime and the fingerprint kernel
    (unset or empty: each uses its default). A positive integer, or a ConfigError naming it."""
    raw = (os.environ if environ is None else environ).get(THREADS, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{THREADS}={raw!r}: expected a positive integer")
    return int(raw)


BESIDE = "PARITY_GATE_BESIDE"
BESIDE_MODES = ("auto", "on", "off")


def beside(environ: dict[str, str] | None = None) -> str:
    """PARITY_GATE_BESIDE: whether the float64 reference may run beside the export
    (``gate.commands.beside``): ``auto`` (unset or empty), ``on`` or ``off``; else a ConfigError naming it."""
    return _mode(BESIDE, environ)


def _mode(name: str, environ: dict[str, str] | None) -> str:
    raw = (os.environ if environ is None else environ).get(name, "").strip().lower() or "auto"
    if raw not in BESIDE_MODES:
        raise ConfigError(f"{name}={raw!r}: expected one of {', '.join(BESIDE_MODES)}")
    return raw
