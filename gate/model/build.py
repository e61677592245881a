"""Build the user's model from its factory, once, and the inputs it runs on.

The same instance is exported and run on PyTorch (an unseeded factory called twice gives two models),
built under ``torch.manual_seed(seed)``; lazy modules get their parameters from one forward under that
seed. Its state is then recorded (``pristine``) and every run starts from it (``BuiltModel.fresh``).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from gate.config import ModelSpec
from gate.core.background import Background
from gate.core.failure import ModelError
from gate.core.layers import ROOT, is_output
from gate.core.names import bad_name, quote
from gate.core.refs import resolve
from gate.core.runs import Meta
from gate.core.status import ErrorStatus
from gate.model import inputs as inputs_mod
from gate.model.pristine import Pristine
from gate.model.weights import Known, Undigestible, WeightsDigest, data, weights_digest


@dataclass
class Module:
    """The model as its factory returned it, normalized for inference, built once per configured
    model: every case of it runs (and is exported from) this instance."""

    module: torch.nn.Module
    digest: Background[WeightsDigest]  # of the weights, hashed on a thread (``weights_digest``)
    normalizations: list[str]  # what the gate changed to run it: recorded in the baseline
    training: list[str]  # modules the factory left in training mode beside others in eval mode
    pristine: Pristine  # its state before any forward: every run starts from it (``fresh``)


@dataclass
class BuiltModel:
    spec: ModelSpec
    module: torch.nn.Module
    inputs: tuple[torch.Tensor, ...]
    input_names: list[str]
    arrays: list[np.ndarray]  # the inputs for ONNX Runtime (bfloat16 widened exactly to float32)
    inputs_digest: str
    digest: Background[WeightsDigest]  # of the weights, hashed on a thread while the export runs
    normalizations: list[str] = field(default_factory=list)
    training: list[str] = field(default_factory=list)
    pristine: Pristine | None = None  # None: a model built outside ``build`` (each run is then on its own)

    @contextlib.contextmanager
    def fresh(self) -> Iterator[None]:
        """A context in which a run (the export, the reference, a provider) gets the model as built,
        whatever earlier runs left in it, and leaves it so: runs cannot contaminate each other."""
        if self.pristine is None:
            yield
            return
        with self.pristine.fresh():
            yield
        self._repeatable(self.pristine)

    def restore(self) -> None:
        if self.pristine is not None:
            self.pristine.restore()
            self._repeatable(self.pristine)

    def _repeatable(self, pristine: Pristine) -> None:
        """Once a forward changed the model's state (restored since: a weight, a buffer, an attribute), two
        runs from the state as built must agree, and so must a second call after the first: else what the gate
        compares (and what the model gives in production) depends on how many runs came before. A model
        refused once is refused at every restore after (a caller may have caught the first)."""
        if pristine.refused:
            raise ModelError(pristine.refused, ErrorStatus.INFER_FAIL)
        changed = pristine.take_rewritten()
        if not changed:
            return
        runs = []
        for restore in (False, True, True):  # built state, the call after it, built state again
            with inference_mode():
                out = self.module(*unshared(self.inputs))
            runs.append([t.detach().double().clone() for t in _tensors(out)])
            if restore:
                pristine.restore()
        for again, why in ((runs[2], "two runs from the state it was built in differ"),
                           (runs[1], "a second call gives other outputs than the first")):
            for i, (a, b) in enumerate(zip(runs[0], again, strict=True)):
                moved = _moved(a, b)
                if not moved <= REPEAT:
                    how = " in place" if changed[0].in_place else ""
                    pristine.refused = (f"model `{self.spec.name}`: its forward changes "
                                        f"`{changed[0].name}`{how}, and {why} (output {i} by {moved:.3g}, "
                                        "relative L2): its runs cannot be repeated")
                    raise ModelError(pristine.refused, ErrorStatus.INFER_FAIL)

    @property
    def weights_digest(self) -> str:
        return self._digest().total

    def record_weights(self, meta: Meta) -> None:
        """The weights' digests and value sums into a run's ``meta`` (hashed by the time it asks)."""
        digest = self._digest()
        meta.weights_digest, meta.tensor_digests, meta.tensor_sums = digest.total, digest.tensors, digest.sums

    def _digest(self) -> WeightsDigest:
        """The weights' digest; hashed again, from the state as built, when a forward wrote into them
        while they were hashed."""
        if self.digest.result().stale:
            self.restore()
            self.digest = weights_digest(self.module)
        return self.digest.result()


REPEAT = 1e-6  # float32 rounding: two runs from one state that differ by more are not the same run


def _moved(a: torch.Tensor, b: torch.Tensor) -> float:
    """Relative L2 of ``a - b`` over the elements equal on neither side; inf where shapes, or where NaN or
    infinite elements, differ (a model with a NaN weight gives NaN where it did before: the same run)."""
    if a.shape != b.shape:
        return math.inf
    same = (a == b) | (a.isnan() & b.isnan())
    if not torch.equal(~a.isfinite() & ~same, torch.zeros_like(same)):
        return math.inf
    d = torch.where(same, torch.zeros_like(a), a - b)
    return float(d.norm() / max(float(torch.where(b.isfinite(), b, 0).norm()), 1e-300))


def _tensors(value: object) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    elif hasattr(value, "to_tuple") and callable(value.to_tuple):  # transformers ModelOutput
        value = list(value.to_tuple())
    return [t for v in value for t in _tensors(v)] if isinstance(value, (tuple, list)) else []


def unshared(inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """The inputs of one forward, its own copy: a forward that writes its input in place (``x.div_``, an
    in-place first activation) changes that call alone, never what later runs (the reference, ONNX Runtime,
    which reads the same memory) are given."""
    return tuple(t.clone() for t in inputs)


@contextlib.contextmanager
def inference_mode() -> Iterator[None]:
    """No autograd, and no MultiheadAttention fast path (its fused op does not export and
    would make PyTorch run a different kernel than the one exported)."""
    previous = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(previous)


ALWAYS = ("no autograd", "multi-head attention fast path off")  # inference_mode, for every model


def build_module(spec: ModelSpec, root: Path, known: Known | None = None) -> Module:
    """Call the factory (under the model's seed) and put the model in eval mode, saying what that changed;
    ``known``: the tensors' digests and sums a baseline recorded (``weights_digest``)."""
    module = _construct(spec, root)
    if not isinstance(module, torch.nn.Module):  # the model's own code: it fails alone, the others are judged
        raise ModelError(f"model `{spec.name}`: `{spec.where}.factory`: `{spec.factory}` returned "
                         f"{type(module).__name__}, not a torch.nn.Module", ErrorStatus.BUILD_FAIL)
    problem = _name_problem(module)
    if problem is not None:  # before anything runs or is written: every name a run records comes from these
        raise ModelError(f"model `{spec.name}`: {problem}", ErrorStatus.BUILD_FAIL)
    training = [name or "(model)" for name, m in module.named_modules() if m.training]
    total = sum(1 for _ in module.named_modules())
    normalizations = list(ALWAYS)
    if training:
        normalizations.append("eval mode (the factory returned it in training mode)" if len(training) == total
                              else f"eval mode ({len(training)} of {total} modules were in training mode)")
    module.eval()
    lazy = _settle(module, spec, root)
    if lazy:
        normalizations.append(f"lazy modules given their parameters by one forward before any run ({', '.join(lazy[:3])}"
                              f"{', …' if len(lazy) > 3 else ''})")
    unread = next(filter(None, (_unreadable(name, t) for name, t in data(module).items())), None)
    if unread is not None:  # every run reads these on the CPU (hashed, exported): the model fails alone
        raise ModelError(f"model `{spec.name}`: {unread}", ErrorStatus.BUILD_FAIL)
    mixed = training if 0 < len(training) < total else []
    try:  # recorded before any run: the export, the reference and each provider start from this state
        digest = weights_digest(module, known)
    except Undigestible as exc:
        raise ModelError(f"model `{spec.name}`: {exc}", ErrorStatus.BUILD_FAIL) from None
    return Module(module, digest, normalizations, mixed,
                  Pristine(module, spec.name, lambda: _rebuilt(spec, root)))


def _name_problem(module: torch.nn.Module) -> str | None:
    """Why a module, parameter or buffer name cannot be recorded (the files' rule for names), or a module
    takes the name of the model's outputs, ``(model)``: its layers would be judged as the outputs."""
    modules = [name for name, _ in module.named_modules(remove_duplicate=False)]
    tensors = [name for named in (module.named_parameters(remove_duplicate=False),
                                  module.named_buffers(remove_duplicate=False)) for name, _ in named]
    why = next(filter(None, map(bad_name, modules + tensors)), None)
    if why is not None:
        return why
    taken = next((name for name in modules if name and is_output(name)), None)
    if taken is None:
        return None
    return (f"module {quote(taken)}: names beginning {ROOT} are reserved for the model's outputs (its layers "
            "would be judged as them): rename the module")


def _unreadable(name: str, t: torch.Tensor) -> str | None:
    """Why the gate cannot read the values of the model's tensor ``name`` (to hash, run and export them), or
    None: it has none yet (a lazy parameter, the meta device) or only through a subclass's own operations."""
    if torch.nn.parameter.is_lazy(t):
        return (f"tensor `{name}` is uninitialized (a lazy module its forward never calls): give the module "
                "its size in the factory, or drop it")
    if t.is_meta:
        return f"tensor `{name}` has no data (meta device): load or initialise its weights in the factory"
    if type(t).__torch_dispatch__ is not torch.Tensor.__torch_dispatch__:  # FakeTensor, a wrapper subclass
        return (f"tensor `{name}` is a {type(t).__name__}, a subclass whose values cannot be read: return "
                "the model with plain tensors")
    return None


def _settle(module: torch.nn.Module, spec: ModelSpec, root: Path) -> list[str]:
    """Lazy modules make their parameters on their first forward: one forward (under the seed, on the
    model's inputs) before anything is recorded, so every run starts from parameters that exist."""
    lazy = [name or "(model)" for name, m in module.named_modules()
            if isinstance(m, torch.nn.modules.lazy.LazyModuleMixin)
            and m.has_uninitialized_params()]  # type: ignore[misc]  # torch types the mixin's self as a Protocol
    if lazy:
        tensors, _ = _inputs(spec, root, module)
        torch.manual_seed(spec.factory_seed if spec.factory_seed is not None else spec.seed)
        try:
            with inference_mode():
                module(*tensors)
        except Exception as exc:
            raise ModelError.of(f"model `{spec.name}`: the forward that gives its lazy modules their parameters raised "
                                f"{type(exc).__name__}: {exc}", ErrorStatus.BUILD_FAIL, exc) from None
    return lazy


def _rebuilt(spec: ModelSpec, root: Path) -> torch.nn.Module:
    """The model built again as ``build_module`` built it (to restore what a forward wrote into its weights)."""
    module = _construct(spec, root)
    if not isinstance(module, torch.nn.Module):  # it was one at the first build: the factory changed its mind
        raise ModelError(f"model `{spec.name}`: factory `{spec.factory}` returned {type(module).__name__} when "
                         "built again, not a torch.nn.Module", ErrorStatus.BUILD_FAIL)
    module.eval()
    _settle(module, spec, root)
    return module


def _construct(spec: ModelSpec, root: Path) -> object:
    """The factory's model, or a sweep case's module, made under the model's seed."""
    factory = None if spec.sweep else resolve(spec.factory, root, f"{spec.where}.factory", spec.name)
    torch.manual_seed(spec.factory_seed if spec.factory_seed is not None else spec.seed)
    if spec.sweep:
        from gate.model.sweep import build_case

        return _uncompiled(build_case(spec, root))
    try:
        return _uncompiled(factory())
    except (Exception, SystemExit) as exc:  # sys.exit(0) in a factory must not end the check with a pass
        raise ModelError.of(f"model `{spec.name}`: factory `{spec.factory}` raised {type(exc).__name__}: {exc}",
                            ErrorStatus.BUILD_FAIL, exc) from None


def _uncompiled(module: object) -> object:
    """``torch.compile``'s wrappers, of the model or its modules, swapped for the modules they compile:
    the gate checks what the model computes (the export ships that), and its hooks break a compiled graph."""
    compiled = getattr(sys.modules.get("torch._dynamo.eval_frame"), "OptimizedModule", None)
    if compiled is None:  # nothing was compiled: torch.compile imports it
        return module
    while isinstance(module, compiled):
        module = module._orig_mod
    if isinstance(module, torch.nn.Module):
        for m in list(module.modules()):
            for key, child in m._modules.items():
                while isinstance(child, compiled):
                    child = m._modules[key] = child._orig_mod
    return module


def build(spec: ModelSpec, root: Path, built: Module | None = None) -> BuiltModel:
    """The model (``built``, or built now) with this case's inputs."""
    m = built or build_module(spec, root)
    tensors, names = _inputs(spec, root, m.module)
    arrays = [t.detach().cpu().float().numpy() if t.dtype == torch.bfloat16 else t.detach().cpu().numpy()
              for t in tensors]
    return BuiltModel(spec, m.module, tensors, names, arrays, inputs_mod.digest(names, arrays), m.digest,
                      m.normalizations, m.training, m.pristine)


def _inputs(spec: ModelSpec, root: Path, module: torch.nn.Module
            ) -> tuple[tuple[torch.Tensor, ...], list[str]]:
    if isinstance(spec.inputs, str) and spec.inputs.endswith(".npz"):
        tensors, names = _npz_inputs(spec)
    elif isinstance(spec.inputs, str):
        fn = resolve(spec.inputs, root, f"{spec.where}.inputs", spec.name)
        # torch's generator at the seed: inputs it draws follow the seed alone, never how many numbers the
        # factory drew before (a refactor that drops an unused layer would give other inputs)
        torch.manual_seed(spec.seed)
        try:
            produced = fn(spec.seed)
        except (Exception, SystemExit) as exc:
            raise ModelError.of(f"model `{spec.name}`: inputs `{spec.inputs}` raised {type(exc).__name__}: {exc}",
                                ErrorStatus.BUILD_FAIL, exc) from None
        if isinstance(produced, torch.Tensor):
            produced = (produced,)
        if not isinstance(produced, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in produced):
            raise ModelError(f"model `{spec.name}`: `{spec.where}.inputs`: `{spec.inputs}` returned "
                             f"{type(produced).__name__}, not a tuple of tensors", ErrorStatus.BUILD_FAIL)
        tensors, names = tuple(produced), [f"input_{i}" for i in range(len(produced))]
    else:
        arrays = inputs_mod.generate(spec.inputs, spec.seed)
        tensors = tuple(torch.from_numpy(a).to(torch.bfloat16) if s.dtype == "bfloat16" else torch.from_numpy(a)
                        for s, a in zip(spec.inputs, arrays, strict=True))
        names = [s.name for s in spec.inputs]
    # Inputs are checked before use: a NaN going in would be blamed on the first layer.
    for name, t in zip(names, tensors, strict=True):
        if t.is_floating_point() and not torch.isfinite(t).all():
            raise ModelError(f"model `{spec.name}`: input `{name}` contains NaN/Inf", ErrorStatus.BUILD_FAIL)
    if not isinstance(spec.inputs, str) or spec.inputs.endswith(".npz"):  # names the user gave
        _check_order(spec, module, names)
    return tensors, names


def _check_order(spec: ModelSpec, module: torch.nn.Module, names: list[str]) -> None:
    """Inputs reach ``forward`` by position (so the graph's inputs keep the declared order): one named after
    a parameter that its position does not bind would be fed to another parameter, unsaid. Names of no
    parameter (labels, ``*args``) bind by position alone."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):  # no signature to read (a scripted or native forward)
        return
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    named = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    for k, name in enumerate(names):
        takes = positional[k] if k < len(positional) else None
        if name in named and name != takes:
            key = f"{spec.where}.inputs" + (f"[{k + 1}].name" if isinstance(spec.inputs, tuple) else "")
            bound = f"`{takes}`" if takes else "no named parameter"
            raise ModelError(f"model `{spec.name}`: `{key}`: `{name}` is passed by position, as forward's "
                             f"{bound} (forward takes {', '.join(positional) or 'nothing by position'}): "
                             "declare the inputs in that order",
                             ErrorStatus.BUILD_FAIL)


def _npz_inputs(spec: ModelSpec) -> tuple[tuple[torch.Tensor, ...], list[str]]:
    """User-supplied real inputs: arrays of an .npz file, in the file's order (no pickles). A file that
    cannot give them fails its model alone (BUILD_FAIL), named with its key."""
    def fail(why: str) -> ModelError:
        return ModelError(f"model `{spec.name}`: `{spec.where}.inputs`: `{spec.inputs}` {why}", ErrorStatus.BUILD_FAIL)

    try:
        with np.load(spec.inputs, allow_pickle=False) as npz:
            names = list(npz.files)
            arrays = [npz[n] for n in names]
    except Exception as exc:  # noqa: BLE001 - a damaged zip, an .npy under this name, pickled data: the file's fault
        raise fail(f"cannot be read as .npz ({type(exc).__name__}: {exc})") from None
    if not arrays:
        raise fail("holds no arrays")
    odd = next((n for n, a in zip(names, arrays, strict=True) if a.dtype.kind not in "biuf"), None)
    if odd is not None:
        raise fail(f"holds `{odd}` of dtype {arrays[names.index(odd)].dtype}, not numbers a model takes")
    return tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays), names
