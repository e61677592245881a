"""Every PyTorch run of a model starts from the model as its factory built it.

A forward can leave state outside the parameters: a cache in a plain dict or attribute
(attention biases gathered once in eval mode, rotary tables, masks, KV caches), a buffer written
in place, an attribute rebound or added. Left there, the float64 reference's state reaches the
float32 run (``expected scalar type Float but found Double``, or silently wrong numbers), the
float32 run's reaches the next case's reference, and the export's reaches both.

``Pristine`` records that state once, right after the build and before any forward, and
``restore`` puts it back; ``fresh()`` restores around a run. It copies no parameter: per module,
the buffers and tensor attributes are cloned once (restored in place, only when a run changed
them: tensor version counters say so), and every other mutable attribute is deep-copied once and
deep-copied again from that copy at each restore (sharing the model's parameters, buffers and
modules). Its memory is the buffers and the non-parameter attributes, not the weights: restoring
beats a deep copy per run, which would hold the weights twice. A parameter a forward changed in
place cannot be restored without a copy of every weight: that is refused, naming it.

State outside the modules (a module-level ``functools.cache``, a global registry) is out of reach.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from gate.core.status import ErrorStatus
from gate.errors import ModelError

# What nn.Module.__init__ sets: torch's registries and hook tables, never restored wholesale;
# "training" is restored like any attribute.
_TORCH_OWN = frozenset(torch.nn.Module().__dict__) - {"training"}
# The hook tables among them. A forward that registers hooks (transformers installs its output
# capturing hooks at the first call and sets a flag saying so) leaves state there too: hooks added
# since the build are removed with the flag, or the next run installs them once more. The gate's own
# hooks live only inside its runs, never across a restore.
_HOOK_TABLES = tuple(sorted(k for k in _TORCH_OWN if "_hooks" in k))
# Kept as they are: values nothing mutates, and handles into torch's hook tables (a copy would point
# at a copy of the table).
_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, torch.Size,
              torch.utils.hooks.RemovableHandle)


def _version(t: torch.Tensor) -> int | None:
    try:
        return t._version
    except RuntimeError:  # an inference tensor keeps no version counter
        return None


def _immutable(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_immutable(v) for v in value)
    return isinstance(value, _IMMUTABLE)


@dataclass
class _Tensor:
    """A buffer or tensor attribute: the object, its version, and its values at the build."""

    obj: torch.Tensor
    version: int | None
    values: torch.Tensor

    @classmethod
    def of(cls, t: torch.Tensor) -> _Tensor:
        with torch.no_grad():
            return cls(t, _version(t), t.detach().clone())

    def restored(self) -> torch.Tensor:
        if self.version is None or _version(self.obj) != self.version:
            with torch.no_grad():
                self.obj.copy_(self.values)
            self.version = _version(self.obj)
        return self.obj


@dataclass
class _Module:
    params: dict[str, torch.nn.Parameter | None]
    param_versions: dict[str, int | None]
    modules: dict[str, torch.nn.Module | None]
    buffers: dict[str, _Tensor | None]
    tensors: dict[str, _Tensor]  # plain attributes holding a tensor
    plain: dict[str, Any]  # immutable attributes, as they were
    copies: dict[str, Any] = field(default_factory=dict)  # mutable attributes, deep-copied at the build
    hooks: dict[str, frozenset] = field(default_factory=dict)  # per hook table, the hook ids at the build


class Pristine:
    """The state of ``module``'s modules as built; ``name`` is the model's, for errors."""

    def __init__(self, module: torch.nn.Module, name: str):
        self.name = name
        self.shared = self._shared(module)
        memo = dict(self.shared)
        self.saved = [(qual, m, self._record(m, memo)) for qual, m in module.named_modules()]

    @staticmethod
    def _shared(module: torch.nn.Module) -> dict[int, Any]:
        """Parameters, buffers and modules: what a deep copy of an attribute must share, not copy."""
        shared: dict[int, Any] = {}
        for m in module.modules():
            shared[id(m)] = m
            for t in (*m._parameters.values(), *m._buffers.values()):
                if t is not None:
                    shared[id(t)] = t
        return shared

    @staticmethod
    def _record(m: torch.nn.Module, memo: dict[int, Any]) -> _Module:
        state = _Module(dict(m._parameters), {k: None if p is None else _version(p) for k, p in m._parameters.items()},
                        dict(m._modules), {k: None if b is None else _Tensor.of(b) for k, b in m._buffers.items()},
                        {}, {}, hooks={k: frozenset(getattr(m, k)) for k in _HOOK_TABLES if hasattr(m, k)})
        for key, value in m.__dict__.items():
            if key in _TORCH_OWN:
                continue
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                state.tensors[key] = _Tensor.of(value)
            elif _immutable(value) or id(value) in memo and memo[id(value)] is value:
                state.plain[key] = value
            else:
                try:
                    state.copies[key] = copy.deepcopy(value, memo)
                    copy.deepcopy(state.copies[key], dict(memo))  # each restore copies the copy again
                except Exception:  # noqa: BLE001 - cannot be copied (a lock, a handle): kept as it is
                    state.copies.pop(key, None)
                    state.plain[key] = value
        return state

    def restore(self) -> None:
        """Every module's state as it was built; then ModelError if a run changed a parameter in place."""
        memo, changed = dict(self.shared), []
        for qual, m, state in self.saved:
            changed += [f"{qual}.{key}" if qual else key for key, p in state.params.items() if p is not None
                        and state.param_versions[key] is not None and _version(p) != state.param_versions[key]]
            for registry, saved in ((m._parameters, state.params), (m._modules, state.modules)):
                if registry.keys() != saved.keys() or any(registry[k] is not v for k, v in saved.items()):
                    registry.clear()
                    registry.update(saved)
            for table, ids in state.hooks.items():
                for hook_id in [i for i in getattr(m, table, ()) if i not in ids]:
                    del getattr(m, table)[hook_id]
            m._buffers.clear()
            m._buffers.update({k: None if b is None else b.restored() for k, b in state.buffers.items()})
            for key in [k for k in m.__dict__ if k not in _TORCH_OWN]:
                if key not in state.tensors and key not in state.plain and key not in state.copies:
                    del m.__dict__[key]  # made by a forward
            for key, t in state.tensors.items():
                m.__dict__[key] = t.restored()
            m.__dict__.update(state.plain)
            for key, value in state.copies.items():
                m.__dict__[key] = copy.deepcopy(value, memo)
        if changed:
            raise ModelError(f"model `{self.name}`: its forward changed parameter `{changed[0]}` in place; its runs "
                             "cannot start from the same weights", ErrorStatus.INFER_FAIL)

    @contextlib.contextmanager
    def fresh(self) -> Iterator[None]:
        """The block runs on the model as built, and leaves it so."""
        self.restore()
        try:
            yield
        except BaseException:
            with contextlib.suppress(ModelError):  # the block's own failure is the one to report
                self.restore()
            raise
        self.restore()
