"""User-facing errors. This module imports nothing of parity-gate, so every part can raise them
(``ModelError`` carries a report word and lives above, in ``gate.core.failure``). The CLI prints a
``GateError`` as one line and exits with its ``exit_code``; any other exception is a bug: it keeps its
traceback and exits with ``INTERNAL_ERROR``, never with a regression's 1."""

from __future__ import annotations

INTERNAL_ERROR = 4  # an unexpected exception: a bug, reported with its traceback


class GateError(Exception):
    """A usage, configuration or file-format error (exit 2)."""

    exit_code = 2


class ConfigError(GateError):
    """The configuration is missing or invalid."""


class FormatError(GateError):
    """A baseline, result or report file is malformed, too large or of an unknown version."""


class StaleFormat(FormatError):
    """A file of an older format, or fingerprints of other parameters: re-recording it is the fix."""


class LfsPointer(FormatError):
    """A Git LFS pointer where the file should be: ``git lfs pull`` fetches it."""


class NewerFormat(FormatError):
    """A file written by a newer parity-gate: upgrading reads it; re-recording would drop what it holds."""
