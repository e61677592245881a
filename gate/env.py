"""Settings read from the environment, each parsed by one rule: a caller calls the accessor that
names the variable, and never reads ``os.environ`` itself."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gate.errors import ConfigError

THREADS = "PARITY_GATE_THREADS"
BESIDE = "PARITY_GATE_BESIDE"
BESIDE_MODES = ("auto", "on", "off")
FULL = "PARITY_GATE_FULL"
CACHE_DIR, CACHE_MAX_GB = "PARITY_GATE_CACHE_DIR", "PARITY_GATE_CACHE_MAX_GB"
DEBUG = "PARITY_GATE_DEBUG"
WORKER_HOOK = "PARITY_GATE_WORKER_HOOK"
CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
BACKEND = "PARITY_GATE_BACKEND"
DEVICE_FINGERPRINT = "PARITY_GATE_DEVICE_FINGERPRINT"


def _read(name: str, environ: Mapping[str, str] | None) -> str | None:
    return (os.environ if environ is None else environ).get(name)


def threads(environ: Mapping[str, str] | None = None) -> int | None:
    """PARITY_GATE_THREADS: intra-op threads of torch, ONNX Runtime and the fingerprint kernel
    (unset or empty: each uses its default). A positive integer, or a ConfigError naming it."""
    raw = (_read(THREADS, environ) or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{THREADS}={raw!r}: expected a positive integer")
    return int(raw)


def beside(environ: Mapping[str, str] | None = None) -> str:
    """PARITY_GATE_BESIDE: whether the float64 reference may run beside the export
    (``gate.pipeline.beside``): ``auto`` (unset or empty), ``on`` or ``off``; else a ConfigError naming it."""
    raw = (_read(BESIDE, environ) or "").strip().lower() or "auto"
    if raw not in BESIDE_MODES:
        raise ConfigError(f"{BESIDE}={raw!r}: expected one of {', '.join(BESIDE_MODES)}")
    return raw


def _flag(name: str, environ: Mapping[str, str] | None) -> bool:
    return (_read(name, environ) or "").strip().lower() not in ("", "0", "false", "no", "off")


def full(environ: Mapping[str, str] | None = None) -> bool:
    """PARITY_GATE_FULL: ``check --full``, every stage computed (set and not 0, false, no or off)."""
    return _flag(FULL, environ)


def debug(environ: Mapping[str, str] | None = None) -> bool:
    """PARITY_GATE_DEBUG (``--debug``, which workers inherit): whole tracebacks in the results."""
    return _flag(DEBUG, environ)


def store_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The export cache's folder: PARITY_GATE_CACHE_DIR (empty, ``off``, ``none`` or ``0``: None, the
    cache off), else ``parity-gate`` under XDG_CACHE_HOME or ``~/.cache``."""
    value = _read(CACHE_DIR, environ)
    if value is not None:
        return None if value.strip().lower() in ("", "off", "none", "0") else Path(value).expanduser()
    base = _read("XDG_CACHE_HOME", environ) or str(Path.home() / ".cache")
    return Path(base) / "parity-gate"


def store_max_bytes(environ: Mapping[str, str] | None = None) -> int:
    """PARITY_GATE_CACHE_MAX_GB: the export cache's bound, in bytes (unset or not a number: 20 GB)."""
    try:
        return int(float(_read(CACHE_MAX_GB, environ) or "20") * 2**30)
    except ValueError:
        return 20 * 2**30


def worker_hook(environ: Mapping[str, str] | None = None) -> str | None:
    """PARITY_GATE_WORKER_HOOK=module:function, run in a worker before its provider (fault tests)."""
    return _read(WORKER_HOOK, environ) or None


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: containers, taskset)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def cuda_visible_devices(environ: Mapping[str, str] | None = None) -> str | None:
    """CUDA_VISIBLE_DEVICES as CUDA reads it (None: unset, every device visible)."""
    return _read(CUDA_VISIBLE_DEVICES, environ)


def backend(environ: Mapping[str, str] | None = None) -> str:
    """PARITY_GATE_BACKEND: the fingerprint backend asked for (empty: the module picks;
    ``gate.fingerprint`` checks the name)."""
    return (_read(BACKEND, environ) or "").strip()


def device_fingerprint(environ: Mapping[str, str] | None = None) -> str:
    """PARITY_GATE_DEVICE_FINGERPRINT: ``device`` (unset or empty) fingerprints CUDA tensors where they
    are, ``host`` copies them first; else a ConfigError naming it."""
    raw = (_read(DEVICE_FINGERPRINT, environ) or "").strip() or "device"
    if raw not in ("device", "host"):
        raise ConfigError(f"{DEVICE_FINGERPRINT}={raw!r}: expected 'device' or 'host'")
    return raw


def in_ci(environ: Mapping[str, str] | None = None) -> bool:
    """CI: set by every hosted CI service; what is only for a person at a clone is not said there."""
    return bool(_read("CI", environ))


def github_actions(environ: Mapping[str, str] | None = None) -> bool:
    """GITHUB_ACTIONS=true: a step of a GitHub Actions job, whose log reads workflow commands."""
    return _read("GITHUB_ACTIONS", environ) == "true"


def declared(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """A variable a config declares its transform reads (``env:NAME``); None where unset."""
    return _read(name, environ)
