"""One computation on a thread beside the caller's, its result (or its exception) collected later:
hashlib and file reads release the GIL, so hashing the weights overlaps the export and hashing the
file overlaps the float64 reference.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """``fn(*args)`` started now on a daemon thread; ``result()`` waits for it and re-raises."""

    def __init__(self, fn: Callable[..., T], *args: object) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True,
                                        name=f"parity-gate {getattr(fn, '__name__', 'background')}")
        self._thread.start()

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...]) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # handed to whoever asks for the result
            self._error = exc

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
