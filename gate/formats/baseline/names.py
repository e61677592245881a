"""The one place a model name becomes a path."""

from __future__ import annotations

from pathlib import Path

from gate.core.names import check_model_name
from gate.errors import ConfigError

SUFFIX = ".msgpack.zst"


def baseline_path(baseline_dir: Path, model: str) -> Path:
    """``<baseline_dir>/<model>.msgpack.zst``, always a direct child of ``baseline_dir``; ConfigError
    unless ``model`` is a valid name (no separator, not '.' or '..')."""
    check_model_name(model)
    path = Path(baseline_dir) / f"{model}{SUFFIX}"
    # Belt and braces: the name rules above already guarantee this.
    if path.parent != Path(baseline_dir) or path.name != f"{model}{SUFFIX}":
        raise ConfigError(f"model name {ascii(model)} does not name a file inside {baseline_dir}")
    return path
