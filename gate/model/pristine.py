"""Every PyTorch run of a model starts from the model as its factory built it.

A forward can leave state outside the parameters (caches in attributes, buffers written in place,
attributes rebound); left there, the float64 reference's state reaches the float32 run and the
export's reaches both. ``Pristine`` records that state once, after the build and before any forward,
and ``restore`` puts it back: buffers and tensor attributes in place when their version counters
moved or their values did, other mutable attributes deep-copied, so it never holds the weights twice.
Parameters a forward changes in place come from the factory called once more under the same seed
(``rebuild``), once its other weights are found equal to the model's. Whatever it finds changed (an attribute
equal to the one built is not) is reported once (``take_rewritten``), for the build to check the model's
second call. State outside the modules is out
of reach, and so are a scripted module's attributes but its parameters, buffers and submodules.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch

from gate.core.failure import ModelError
from gate.core.status import ErrorStatus

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


def version_of(t: torch.Tensor) -> int | None:
    try:
        return t._version
    except RuntimeError:  # an inference tensor keeps no version counter
        return None


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equal: a NaN equals the same NaN (``torch.equal`` calls a tensor holding one unequal to
    itself), -0.0 is not 0.0. An uninitialized or unreadable tensor equals nothing."""
    try:
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.device == b.device and a.data_ptr() == b.data_ptr() and a.stride() == b.stride():
            return True
        return bool(torch.equal(a.detach().contiguous().reshape(-1).view(torch.uint8),
                                b.detach().contiguous().reshape(-1).view(torch.uint8)))
    except (RuntimeError, ValueError):
        return False


def _attributes(m: torch.nn.Module) -> dict[str, Any]:
    """The attributes of ``m`` that are the model's, not torch's: none of a ScriptModule, whose
    ``__dict__`` holds torch's handles on its compiled module (a copy put back would detach it)."""
    if isinstance(m, torch.jit.ScriptModule):
        return {}
    return {k: v for k, v in m.__dict__.items() if k not in _TORCH_OWN}


def _put_back(registry: Any, saved: dict[str, Any]) -> None:
    """``registry`` (parameters, buffers or submodules) holding ``saved`` again."""
    if {*registry.keys()} == saved.keys() and all(registry[k] is v for k, v in saved.items()):
        return
    if isinstance(registry, dict):
        registry.clear()
        registry.update(saved)
    else:  # a ScriptModule's: a view of its compiled module, whose names are fixed when it is scripted
        for k, v in saved.items():
            registry[k] = v


def _immutable(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_immutable(v) for v in value)
    return isinstance(value, _IMMUTABLE)


class Change(NamedTuple):
    """State a forward changed: ``name`` written in place (a parameter, a buffer, a tensor attribute, a
    container's contents), or else an attribute rebound, added or deleted."""

    name: str
    in_place: bool


def _same(a: Any, b: Any, seen: set[tuple[int, int]]) -> bool:
    """``a`` holds what ``b`` holds: tensors bitwise, containers and objects by their contents. A value it
    cannot compare counts as changed (that costs one second call, never a pass)."""
    if a is b or (id(a), id(b)) in seen:
        return True
    if type(a) is not type(b) or isinstance(a, torch.nn.Module):  # a module kept outside the model
        return False
    seen.add((id(a), id(b)))
    if isinstance(a, torch.Tensor):
        return same_bytes(a, b)
    if isinstance(a, torch.Generator):  # its state is its value (a forward that draws from it moves it)
        return torch.equal(a.get_state(), b.get_state())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, seen) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k], seen) for k in a)
    if _immutable(a) or isinstance(a, (set, frozenset)):
        return bool(a == b)
    return hasattr(a, "__dict__") and _same(vars(a), vars(b), seen)


@dataclass
class _Tensor:
    """A buffer or tensor attribute: the object, its version, and its values at the build."""

    obj: torch.Tensor
    version: int | None
    values: torch.Tensor

    @classmethod
    def of(cls, t: torch.Tensor) -> _Tensor:
        with torch.no_grad():
            return cls(t, version_of(t), t.detach().clone())

    @property
    def written(self) -> bool:
        """Written in place since it was recorded or last restored: its version moved, or its values did (a
        kernel can write without moving the version: batch_norm's running statistics in training mode)."""
        if self.version is not None and version_of(self.obj) != self.version:
            return True
        if self.obj.layout != torch.strided or self.obj.is_meta:
            return self.version is None  # nothing to compare: an inference one is put back every time
        return not same_bytes(self.obj, self.values)

    def restored(self) -> torch.Tensor:
        if self.written:
            with torch.no_grad():
                self.obj.copy_(self.values)
            self.version = version_of(self.obj)
        return self.obj


_GONE = object()  # an attribute a forward deleted


def _rebound(m: torch.nn.Module, state: _Module) -> list[Change]:
    """The attributes of ``m`` a forward added, deleted or rebound to another value, and the containers whose
    contents it changed (a value equal to the one built, an ``int`` counted to the same number, is none)."""
    now = _attributes(m)
    built = {**state.plain, **{k: t.values for k, t in state.tensors.items()}, **state.copies}
    held = {**state.plain, **{k: t.obj for k, t in state.tensors.items()}, **state.placed}
    out = [Change(k, False) for k in now if k not in built]
    for k, value in built.items():
        new = now.get(k, _GONE)
        if new is held[k]:  # the same object: a tensor's writes are seen as a buffer's are
            if k in state.copies and not _same(new, value, set()):
                out.append(Change(k, True))
        elif not _same(new, value, set()):
            out.append(Change(k, False))
    return out


@dataclass
class _Module:
    params: dict[str, torch.nn.Parameter | None]
    param_versions: dict[str, int | None]
    modules: dict[str, torch.nn.Module | None]
    buffers: dict[str, _Tensor | None]
    tensors: dict[str, _Tensor]  # plain attributes holding a tensor
    plain: dict[str, Any]  # immutable attributes, as they were
    copies: dict[str, Any] = field(default_factory=dict)  # mutable attributes, deep-copied at the build
    placed: dict[str, Any] = field(default_factory=dict)  # the objects of ``copies`` the module holds now
    # per hook table, the hook ids at the build
    hooks: dict[str, frozenset[int]] = field(default_factory=dict)


class Pristine:
    """The state of ``module``'s modules as built; ``name`` is the model's, for errors; ``rebuild`` makes
    the model again as built (the factory under its seed), for parameters a forward changes in place."""

    def __init__(self, module: torch.nn.Module, name: str, rebuild: Callable[[], torch.nn.Module] | None = None):
        self.name, self.module, self.rebuild = name, module, rebuild
        self.shared = self._shared(module)
        memo = dict(self.shared)
        self.saved = [(qual, m, self._record(m, memo)) for qual, m in module.named_modules()]
        self.originals: dict[str, torch.Tensor] = {}  # parameter -> its values as built (changed by a forward)
        # state a run changed, restored for the first time since ``take_rewritten``
        self.rewritten: list[Change] = []
        self._written: set[str] = set()  # every name ever found changed
        self.refused: str | None = None  # why its runs cannot be repeated, once found (``BuiltModel``)

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
        state = _Module(dict(m._parameters), {k: None if p is None else version_of(p) for k, p in m._parameters.items()},
                        dict(m._modules), {k: None if b is None else _Tensor.of(b) for k, b in m._buffers.items()},
                        {}, {}, hooks={k: frozenset(getattr(m, k)) for k in _HOOK_TABLES if hasattr(m, k)})
        for key, value in _attributes(m).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                state.tensors[key] = _Tensor.of(value)
            elif _immutable(value) or id(value) in memo and memo[id(value)] is value:
                state.plain[key] = value
            else:
                try:
                    state.copies[key], state.placed[key] = copy.deepcopy(value, memo), value
                    copy.deepcopy(state.copies[key], dict(memo))  # each restore copies the copy again
                except Exception:  # noqa: BLE001 - cannot be copied (a lock, a handle): kept as it is
                    state.copies.pop(key, None)
                    state.placed.pop(key, None)
                    state.plain[key] = value
        return state

    def restore(self) -> None:
        """Every module's state as it was built, parameters a run changed in place included."""
        memo, changed = dict(self.shared), []
        for qual, m, state in self.saved:
            changed += [(f"{qual}.{key}" if qual else key, state, key) for key, p in state.params.items() if p is not None
                        and state.param_versions[key] is not None and version_of(p) != state.param_versions[key]]
            _put_back(m._parameters, state.params)
            _put_back(m._modules, state.modules)
            for table, ids in state.hooks.items():
                for hook_id in [i for i in getattr(m, table, ()) if i not in ids]:
                    del getattr(m, table)[hook_id]
            # a module in training mode writes its statistics by design (the training audit's to judge)
            tensors = () if m.training else (*state.buffers.items(), *state.tensors.items())
            moved = [Change(key, True) for key, b in tensors if b is not None and b.written]
            moved += _rebound(m, state)
            self._found([Change(f"{qual}.{c.name}" if qual else c.name, c.in_place) for c in moved])
            _put_back(m._buffers, {k: None if b is None else b.restored() for k, b in state.buffers.items()})
            for key in _attributes(m):
                if key not in state.tensors and key not in state.plain and key not in state.copies:
                    del m.__dict__[key]  # made by a forward
            for key, t in state.tensors.items():
                m.__dict__[key] = t.restored()
            m.__dict__.update(state.plain)
            for key, value in state.copies.items():
                m.__dict__[key] = state.placed[key] = copy.deepcopy(value, memo)
        if changed:
            self._rewrite(changed)

    def _rewrite(self, changed: list[tuple[str, _Module, str]]) -> None:
        """Parameters a run changed in place, back to their values as built."""
        missing = [name for name, _, _ in changed if name not in self.originals]
        if missing:
            self.originals.update(self._as_built(missing))
            self._found([Change(name, True) for name in missing])
        with torch.no_grad():
            for name, state, key in changed:
                p = state.params[key]
                assert p is not None  # ``changed`` lists only parameters that exist
                p.copy_(self.originals[name])
                state.param_versions[key] = version_of(p)

    def _as_built(self, names: list[str]) -> dict[str, torch.Tensor]:
        """The values ``names`` had when the model was built, from the model built again; refused where
        it cannot be built again, or is built with other weights."""
        refused = f"model `{self.name}`: its forward changed parameter `{names[0]}` in place"
        if self.rebuild is None:
            raise ModelError(f"{refused}, and it was not built from a factory: its runs cannot start from the same "
                             "weights", ErrorStatus.INFER_FAIL)
        try:
            again = dict(self.rebuild().named_parameters(remove_duplicate=False))
        except Exception as exc:  # noqa: BLE001 - the model was built once: a second build failing is the news
            raise ModelError(f"{refused}; building it again to restore it failed ({type(exc).__name__}: {exc})",
                             ErrorStatus.INFER_FAIL) from None
        with torch.no_grad():
            for name, p in self.module.named_parameters(remove_duplicate=False):
                if name not in names and (name not in again or not same_bytes(p, again[name])):
                    raise ModelError(f"{refused}; its factory builds other weights when called again (`{name}` "
                                     "differs), so its runs cannot start from the weights it was built with",
                                     ErrorStatus.INFER_FAIL)
            return {name: again[name].detach() for name in names}

    def _found(self, changes: list[Change]) -> None:
        self.rewritten += [c for c in changes if c.name not in self._written]
        self._written.update(c.name for c in changes)

    def take_rewritten(self) -> list[Change]:
        """The state restored to its values as built for the first time since the last call."""
        out, self.rewritten = self.rewritten, []
        return out

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
