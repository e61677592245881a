"""Projects recorded once, then checked with another factory: the config of each (``config``) is written
into one folder, its baseline recorded; a check writes the model's config again with the factory it names."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from gate import commands
from gate.config import load_config

Config = Callable[[Path, str, str], Path]  # (folder, model, factory) -> the config written there


def record(tmp: Path, config: Config, models: Iterable[tuple[str, str]]) -> Path:
    """Each (model, factory) recorded in ``tmp``."""
    for model, factory in models:
        cfg = load_config(config(tmp, model, factory))
        commands.update_baseline(cfg, cfg.models, cfg.providers)
    return tmp


def check(tmp: Path, config: Config, model: str, factory: str) -> dict:
    """The report of ``model`` checked with ``factory``, as a dict."""
    cfg = load_config(config(tmp, model, factory))
    return commands.check(cfg, cfg.models, cfg.providers).to_dict()
