"""User-facing errors; this module imports nothing of parity-gate, so every part (the
fingerprint kernel included) can raise them. ``ModelError``, a model that failed, carries a
word of the report's vocabulary and lives above it, in ``gate.core.failure``.

A ``GateError`` is a mistake in what the user gave us (a config key, a file, a model):
the CLI prints ``str(error)`` as one line and exits with ``error.exit_code``. Any other
exception is a bug in parity-gate: it keeps its traceback and exits with ``INTERNAL_ERROR``, never
with a regression's 1.
"""

from __future__ import annotations

INTERNAL_ERROR = 4  # an unexpected exception: a bug, reported with its traceback


class GateError(Exception):
    """A usage, configuration or file-format error (exit 2)."""

    exit_code = 2


class ConfigError(GateError):
    """The configuration is missing or invalid."""


class FormatError(GateError):
    """A baseline, result or report file is malformed, too large or of an unknown version."""
