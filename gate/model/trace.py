"""The probe: one float32 forward on CPU, every module call fingerprinted (what the ``torch-cpu``
provider computes) and every ATen operation traced into a digest, with the module calls (the ``code`` part
of the content key).

The trace is a ``TorchDispatchMode`` (``dispatch.DispatchMode``): one line per operation, each tensor
argument named by where it came from (a parameter, buffer or tensor attribute by name, an input by
position, an earlier output by number, else its bytes), so dataflow is in the trace. Each module also
gets a digest of its own code (``Probe.modules``, tensors by kind rather than number) and of where among
it it calls its children (``Probe.calls``): a refactor inside a module changes that module's digests only
(``gate.verdict.moves``).
Randomness is told by the generators' states before and after the forward, not by operator names. What a
dispatch trace cannot see: docs/verdict.md#what-the-keys-cannot-see.
"""

from __future__ import annotations

import hashlib
import random as pyrandom
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import _disable_current_modes
from torch.utils.weak import WeakIdKeyDictionary

from gate.core import frames
from gate.core.layers import ROOT, module_of
from gate.fingerprint import Fingerprint
from gate.model import torch_hooks, weights
from gate.model.build import BuiltModel
from gate.model.dispatch import DispatchMode

# Namespaces whose kernels ship with torch: their versions are torch's. Others are custom ops.
TORCH_NAMESPACES = frozenset({"aten", "prims", "prim", "quantized", "_quantized", "quantized_decomposed"})


def _content(t: torch.Tensor) -> str:
    """A short digest of a tensor's values (outside any mode: this is the trace's own work)."""
    with _disable_current_modes(), torch.no_grad():
        flat = t.detach().cpu().contiguous()
        if flat.dtype == torch.bfloat16:
            flat = flat.view(torch.int16)
        try:
            data = flat.numpy().tobytes()
        except (TypeError, RuntimeError):  # dtypes NumPy lacks (float8, quantized): their text
            data = repr(flat.tolist()).encode()
    return hashlib.sha256(data).hexdigest()[:16]


class OpTrace(DispatchMode):
    """Digests every dispatched operation (see the module's docstring)."""

    def __init__(self, named: dict[torch.Tensor, str], where: Callable[[], str] | None = None):
        super().__init__()
        self._where = where  # the innermost module call running (``torch_hooks.Capture.where``)
        self._modules: dict[str, Any] = {}  # module -> the digest of the operations run directly inside it
        self._own: dict[str, int] = {}  # module -> how many operations ran directly inside it
        self._calls: dict[str, Any] = {}  # module -> the digest of where, among those, it called its children
        self._tokens: WeakIdKeyDictionary = WeakIdKeyDictionary(named)
        self._sha = hashlib.sha256(b"parity-gate op trace v1\n")
        self.ops = 0
        self._made = 0  # tensors the traced operations made: their numbers in the trace
        self.random: list[str] = []  # random operations handed a generator no state was taken of
        self.seeded: list[str] = []  # operations tagged random (they draw only if a state moved)
        self.known: set[int] = set()  # ids of the generators whose states the probe compares
        self.generators: list[tuple[str, torch.Generator]] = []  # those generators, by name
        self.draws: list[str] = []  # random operations that drew, and where the user's code called them
        self.custom: set[str] = set()  # operations outside torch's own namespaces
        self.first_use: dict[str, str] = {}  # parameter or buffer -> the module call that first read it

    @property
    def digest(self) -> str:
        return self._sha.hexdigest()

    def _token(self, t: torch.Tensor) -> str:
        token = self._tokens.get(t)
        if token is None:
            # Neither a parameter, an input, nor made by an earlier operation: known by its bytes.
            token = f"c:{_content(t)}"
            self._tokens[t] = token
        return token

    def _tensor(self, t: torch.Tensor, local: bool) -> str:
        meta = f"{t.dtype}{list(t.shape)}"
        if t.layout == torch.strided:
            meta += f"s{list(t.stride())}+{t.storage_offset()}"
        token = self._token(t)
        if token[:2] in ("p:", "b:") and self._where is not None and token[2:] not in self.first_use:
            self.first_use[token[2:]] = module_of(self._where())  # tied weights: not always their owner
        if local and token[0] in "#i":  # made by an operation, or an input: by kind, not by number
            token = "t"
        return f"{token}<{meta}@{t.device.type}>"

    def _enc(self, x: Any, local: bool = False) -> str:
        if isinstance(x, torch.Tensor):
            return self._tensor(x, local)
        if isinstance(x, (list, tuple)):
            return "[" + ",".join(self._enc(v, local) for v in x) + "]"
        if isinstance(x, dict):
            return "{" + ",".join(f"{k}={self._enc(v, local)}" for k, v in x.items()) + "}"
        if isinstance(x, float):
            return float.hex(x)  # exact: 0.1 and 0.1 + 1e-17 differ
        if x is None or isinstance(x, (bool, int, str, torch.dtype, torch.device, torch.layout, torch.memory_format)):
            return repr(x)
        text = repr(x)
        # An object whose repr is its address would make every key new: its type must do.
        return type(x).__qualname__ if " at 0x" in text else f"{type(x).__qualname__}({text[:200]})"

    def _outputs(self, out: Any) -> str:
        tensors = [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        for t in tensors:
            if t not in self._tokens:  # an in-place operation returns a tensor it already named
                self._made += 1
                self._tokens[t] = f"#{self._made}"
        return ",".join(f"{self._tokens[t]}<{t.dtype}{list(t.shape)}>" for t in tensors)

    def dispatch(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        line = f"{func}({self._enc(list(args))};{self._enc(kwargs)})"
        seeded = torch.Tag.nondeterministic_seeded in getattr(func, "tags", ())
        states = [g.get_state() for _, g in self.generators] if seeded else []
        out = func(*args, **kwargs)
        if seeded:
            after = [g.get_state() for _, g in self.generators]
            moved = any(not torch.equal(s, a) for s, a in zip(states, after, strict=True))
            if moved and len(self.draws) < 5:
                site = frames.user_site()
                self.draws.append(f"{func} at {site}" if site else str(func))
            self.seeded.append(str(func))
            own = [g for g in torch.utils._pytree.tree_leaves((args, kwargs))
                   if isinstance(g, torch.Generator) and id(g) not in self.known]
            if own:
                self.random.append(f"{func} (its own generator)")
        if getattr(func, "namespace", "aten") not in TORCH_NAMESPACES:
            self.custom.add(str(func))
        self._sha.update(f"{line}->{self._outputs(out)}\n".encode())
        self.ops += 1
        if self._where is not None:
            module = module_of(self._where())
            sha = self._modules.get(module) or self._modules.setdefault(module, hashlib.sha256())
            sha.update(f"{func}({self._enc(list(args), True)};{self._enc(kwargs, True)})\n".encode())
            self._own[module] = self._own.get(module, 0) + 1
        return out

    def entered(self, where: str, child: str) -> None:
        """A module call (``child``, qualified) from the call ``where`` runs: after how many of the caller's
        own operations. An identity child runs none of its own: only this tells where it was called."""
        module = module_of(where)
        sha = self._calls.get(module) or self._calls.setdefault(module, hashlib.sha256())
        sha.update(f"{child.rpartition('.')[2]}@{self._own.get(module, 0)}\n".encode())

    def calls(self) -> dict[str, str]:
        """Per module that called others: a short digest of where among its own operations it called them
        (``Meta.module_calls``)."""
        return {module: sha.hexdigest()[:16] for module, sha in self._calls.items()}

    def modules(self, root: torch.nn.Module) -> dict[str, str]:
        """Per module of ``root`` (its qualified name; the root is ``(model)``): a short digest of its
        class, its children and the operations that ran directly inside its calls."""
        out = {}
        for qual, m in root.named_modules(remove_duplicate=False):
            name = qual or ROOT
            sha = self._modules.get(name, hashlib.sha256()).copy()
            sha.update(f"{type(m).__module__}.{type(m).__qualname__}".encode())
            for child, c in m.named_children():
                sha.update(f"|{child}:{type(c).__module__}.{type(c).__qualname__}".encode())
            out[name] = sha.hexdigest()[:16]
        return out


@dataclass
class Probe:
    """What the probe's forward gave: the ``torch-cpu`` float32 capture and the trace."""

    records: list[torch_hooks.LayerOutput]
    output: Any  # what the forward returned
    trace: str  # the op trace's digest, with the module calls (``_with_calls``)
    ops: int
    random: list[str] = field(default_factory=list)
    custom: list[str] = field(default_factory=list)
    seconds: float = 0.0
    recordable: tuple[str, ...] = ()  # modules whose call signature the export can record (``CallSpecs``)
    modules: dict[str, str] = field(default_factory=dict)  # per module: its own code's digest
    draws: list[str] = field(default_factory=list)  # random operations that drew, where user code called them
    first_use: dict[str, str] = field(default_factory=dict)  # tensor -> the module that first read it
    calls: dict[str, str] = field(default_factory=dict)  # per module: where it called its children

    @property
    def fingerprints(self) -> dict[str, Fingerprint]:
        return {r.name: r.fp for r in self.records}


def _named(built: BuiltModel) -> dict[torch.Tensor, str]:
    """Tensors the trace names: parameters, buffers (persistent or not) and tensors held as plain
    attributes, named as buffers (their values are the weights digest's, ``weights.data``), and the inputs
    (the inputs digest's)."""
    module = built.module
    named: dict[torch.Tensor, str] = {}
    for name, p in module.named_parameters():
        named.setdefault(p, f"p:{name}")
    for name, b in [*module.named_buffers(), *weights.attributes(module).items()]:
        named.setdefault(b, f"b:{name}")
    for i, t in enumerate(built.inputs):
        named.setdefault(t, f"in:{i}")
    return named


def _generators(module: torch.nn.Module) -> list[tuple[str, torch.Generator]]:
    """The generators a forward could draw from without being handed one: the default CPU
    generator, CUDA's (where CUDA is initialized), and any the model's modules hold."""
    out = [("the default CPU generator", torch.default_generator)]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out += [(f"CUDA generator {i}", torch.cuda.default_generators[i]) for i in range(torch.cuda.device_count())]
    for name, m in module.named_modules():
        for attr, value in vars(m).items():
            values = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
            out += [(f"generator `{name}.{attr}`".replace("`.", "`"), g) for g in values
                    if isinstance(g, torch.Generator)]
    return out


def _numpy_state() -> tuple[object, ...]:
    st = np.random.get_state()
    return (st[1].tobytes(), *st[2:]) if isinstance(st, tuple) else (repr(st),)


# Generators outside torch a forward may draw from (np.random.rand(), random.random()): no operation shows
# the draw, only their states do.
_HOST = (("NumPy's global generator", _numpy_state), ("Python's `random`", pyrandom.getstate))


def _with_calls(ops: str, records: list[torch_hooks.LayerOutput]) -> str:
    """The op trace's digest with the module calls that captured it, by name and class: a module that
    runs no operation of its own (an ``Identity`` inserted, a call renamed) changes the layers the
    reference records, so it changes the key."""
    sha = hashlib.sha256(f"parity-gate code v1\n{ops}".encode())
    for r in records:
        sha.update(f"\n{r.name}\t{r.type}".encode())
    return sha.hexdigest()


def probe(built: BuiltModel) -> Probe:
    """The traced, fingerprinted float32 forward (raises what the model raises)."""
    named = _named(built)
    specs = torch_hooks.CallSpecs()  # what the export's trace would otherwise run a forward to learn
    capture = torch_hooks.Capture(built.module, specs=specs)
    trace = OpTrace(named, capture.where)
    capture.on_enter = trace.entered
    start = time.perf_counter()
    with built.fresh():  # from the model as built, and leaving it so: what the forward caches goes
        generators = _generators(built.module)  # as restored: the very objects the forward sees
        trace.known, trace.generators = {id(g) for _, g in generators}, generators
        before = [(name, g, g.get_state()) for name, g in generators]
        host = [(name, read, read()) for name, read in _HOST]
        records = capture.run(built.inputs, trace)
        drawn = [name for name, g, state in before if not torch.equal(state, g.get_state())]
        outside = [f"a draw from {name}" for name, read, state in host if read() != state]
    random = trace.random + ([f"{', '.join(sorted(set(trace.seeded))[:3]) or 'an operation'} drew from "
                              f"{', '.join(drawn[:3])}"] if drawn else []) + outside
    draws = (trace.draws or [r for r in random if "(its own generator)" in r]) + outside
    return Probe(records, capture.output, _with_calls(trace.digest, records), trace.ops, random[:20],
                 sorted(trace.custom)[:50],
                 time.perf_counter() - start, specs.recordable(), trace.modules(built.module), draws[:5],
                 trace.first_use, trace.calls())
