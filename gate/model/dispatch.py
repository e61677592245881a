"""A ``TorchDispatchMode`` that loads no Dynamo until something else has.

torch keeps Dynamo out of every mode's ``__torch_dispatch__`` with a wrapper that imports Dynamo on the
mode's first operation: a second of every check whose path compiles nothing (the probe's trace, the
reference's watch). Here the same guard applies once Dynamo is loaded, the only time something may compile.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from torch._compile import _disable_dynamo
from torch.utils._python_dispatch import TorchDispatchMode


class DispatchMode(TorchDispatchMode):  # type: ignore[no-untyped-call]  # (torch's __init_subclass__)
    """Subclasses implement ``dispatch`` (what ``__torch_dispatch__`` would be)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # no wrapper from torch, which imports Dynamo: ``__torch_dispatch__`` guards itself

    def __torch_dispatch__(self, func: Any, types: Sequence[type], args: Sequence[Any] = (),
                           kwargs: Mapping[str, Any] | None = None) -> Any:
        if "torch._dynamo" in sys.modules:  # something may compile: never this mode's own work
            return _guarded(self, func, types, args, kwargs)
        return self.dispatch(func, types, args, kwargs)

    def dispatch(self, func: Any, types: Sequence[type], args: Sequence[Any] = (),
                 kwargs: Mapping[str, Any] | None = None) -> Any:
        raise NotImplementedError


def _dispatch(mode: DispatchMode, func: Any, types: Sequence[type], args: Sequence[Any],
              kwargs: Mapping[str, Any] | None) -> Any:
    return mode.dispatch(func, types, args, kwargs)


_guarded = _disable_dynamo(_dispatch)  # imports Dynamo on its first call: only once loaded
