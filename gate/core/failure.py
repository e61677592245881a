"""``ModelError``: a model failed to build, export or run (exit 3), with the report's word for
how (``ErrorStatus``) and the user's own frame that failed."""

from __future__ import annotations

from gate.core.frames import trace, user_frame
from gate.core.status import ErrorStatus
from gate.errors import GateError


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
        return cls(message, error_status, user_frame(cause), trace(cause))
