"""The key a CI cache of the store's folder is saved under (``parity-gate cache key``): a digest of the
content keys the selected baselines record. Reads only the baselines."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from gate.config import Config, ModelSpec
from gate.errors import FormatError


def recorded_keys(config: Config, models: Iterable[ModelSpec]) -> str:
    """A digest of the content keys the selected models' baselines record ("none" for a model without
    one). A check can use exactly the entries of these keys, so a cache saved under this digest holds
    what the next unchanged run needs; an unreadable baseline counts as none (``check`` names it)."""
    from gate.commands.common import location
    from gate.formats.baseline import store

    h = hashlib.sha256(b"parity-gate recorded content keys v1\n")
    for spec in models:
        try:
            baseline = store.read(location(config, spec))
        except (FileNotFoundError, FormatError):
            baseline = None
        raw = baseline.meta.content_key if baseline is not None else None
        h.update(f"{spec.name}={raw['key'] if raw else 'none'}\n".encode())
    return h.hexdigest()[:32]
