"""``module:attribute`` references from the config (factories, input callables, transforms),
imported from the config's folder. A module that is not there is the config's error (exit 2); one that
raises while imported (a syntax error, a package it lacks) is the model's: it fails alone (exit 3)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

from gate.core.failure import ModelError
from gate.core.status import ErrorStatus
from gate.errors import ConfigError

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")  # a dotted Python name


def is_ref(text: str) -> bool:
    """Whether ``text`` has the form ``package.module:attribute`` (the config's and ``init``'s one rule)."""
    module, sep, attr = text.partition(":")
    return bool(sep) and IDENT.fullmatch(module) is not None and IDENT.fullmatch(attr) is not None


def resolve(ref: str, root: Path, where: str, model: str | None = None, called: bool = True) -> Any:
    """What ``ref`` names, imported from ``root``; ConfigError naming ``where`` where it does not import, or
    (``called``: a factory, an input generator, a transform) is not callable."""
    module_name, _, attr = ref.partition(":")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and f"{module_name}.".startswith(f"{exc.name}."):
            raise ConfigError(f"`{where}`: cannot import `{module_name}` ({type(exc).__name__}: {exc})") \
                from None
        raise _raised(f"model `{model}`" if model else f"`{where}`", module_name, exc) from None
    except Exception as exc:  # the user's module raised while imported
        raise _raised(f"model `{model}`" if model else f"`{where}`", module_name, exc) from None
    try:
        value = getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"`{where}`: module `{module_name}` has no attribute `{attr}`") from None
    if called and not callable(value):
        raise ConfigError(f"`{where}`: `{ref}` is not callable (it is a `{type(value).__name__}`)")
    return value


def _raised(who: str, module_name: str, exc: Exception) -> ModelError:
    error = ModelError.of(f"{who}: importing `{module_name}` raised {type(exc).__name__}: {exc}",
                          ErrorStatus.BUILD_FAIL, exc)
    if isinstance(exc, SyntaxError) and exc.filename:  # no frame of the file: the parser's own position
        error.where = f"{Path(exc.filename).name}:{exc.lineno}"
    return error
