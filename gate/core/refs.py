"""``module:attribute`` references from the config (factories, input callables, transforms),
imported from the config's folder."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

from gate.errors import ConfigError

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")  # a dotted Python name


def is_ref(text: str) -> bool:
    """Whether ``text`` has the form ``package.module:attribute`` (the config's and ``init``'s one rule)."""
    module, sep, attr = text.partition(":")
    return bool(sep) and IDENT.fullmatch(module) is not None and IDENT.fullmatch(attr) is not None


def resolve(ref: str, root: Path, where: str) -> Any:
    module_name, _, attr = ref.partition(":")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure is the user's module
        raise ConfigError(f"`{where}`: cannot import `{module_name}` ({type(exc).__name__}: {exc})") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"`{where}`: module `{module_name}` has no attribute `{attr}`") from None
