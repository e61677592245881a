"""User-facing errors.

A ``GateError`` is a mistake in what the user gave us (a config key, a file, a model):
the CLI prints ``str(error)`` as one line and exits with ``error.exit_code``. Any other
exception is a bug in parity-gate and keeps its traceback.
"""

from __future__ import annotations

from gate.core.status import ErrorStatus


class GateError(Exception):
    """A usage, configuration or file-format error (exit 2)."""

    exit_code = 2


class ConfigError(GateError):
    """The configuration is missing or invalid."""


class FormatError(GateError):
    """A baseline, result or report file is malformed, too large or of an unknown version."""


class ModelError(GateError):
    """A model failed to build, export or run (exit 3); ``error_status`` is the report's word for it."""

    exit_code = 3

    def __init__(self, message: str, error_status: ErrorStatus = ErrorStatus.INFER_FAIL, where: str | None = None,
                 trace: str | None = None):
        super().__init__(message)
        self.error_status = ErrorStatus(error_status)
        self.where = where  # the user's frame that failed ("models.py:42 in forward"), where known
        self.trace = trace  # the whole traceback, kept with --debug

    @classmethod
    def of(cls, message: str, error_status: ErrorStatus, cause: BaseException) -> ModelError:
        """The error for ``cause``, an exception the user's code raised: its frame, and with --debug
        its traceback, travel with it."""
        from gate.core.frames import trace, user_frame

        return cls(message, error_status, user_frame(cause), trace(cause))
