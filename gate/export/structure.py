"""The structure of a dynamo export: the unoptimized graph with its weights left out (each initializer
named by its state-dict name), and its layer map. It depends on the model's code, inputs and export
settings, not its weights: after a weight-only change the new weights are bound into it and the
exporter's optimizer runs, a fresh export's graph without tracing again (docs/verdict.md#stages).
torch only where a structure is captured or bound.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from gate.core.fields import Obj
from gate.core.runs import OnnxSite, sites_dict
from gate.core.status import SiteKind

if TYPE_CHECKING:
    from gate.store import Entry

FILE = "structure.onnx"
PLACEHOLDER = "parity-gate-weights-not-stored"  # where a left-out weight "lives": nothing is ever read there
WHERE = "store entry (structure)"


class Unbindable(Exception):
    """The stored structure and the model's weights do not fit: the model is exported afresh."""


@dataclass(frozen=True)
class Structure:
    proto: bytes  # the unoptimized graph, each left-out weight an external tensor at PLACEHOLDER
    weights: dict[str, str]  # initializer -> the state-dict name of the tensor it holds
    sites: dict[str, OnnxSite]  # the layer map on the unoptimized graph: every value there exists
    opset: int
    renamed: dict[str, str]  # a value's name in ``proto`` -> the exporter's, which an initializer shares
    proves: ClassVar[frozenset[str]] = frozenset()  # every file hashed by the store

    def output_digest(self) -> str:
        """The structure without what names rather than computes (``graph.graph_digest``), the
        weights it leaves out and its layer map."""
        import onnx

        from gate.export import graph

        h = hashlib.sha256(b"parity-gate structure v1\n")
        h.update(graph.graph_digest(onnx.load_from_string(self.proto)).encode())
        stored = [self.weights, sites_dict(self.sites), self.opset, self.renamed]
        h.update(json.dumps(stored, sort_keys=True).encode())
        return h.hexdigest()

    def differs_from(self, entry: Entry) -> str | None:
        """None when ``entry`` holds this structure, told from its file."""
        same = Structure.from_entry(entry).output_digest() == self.output_digest()
        return None if same else "the structure differs"

    def payload(self) -> dict[str, Any]:
        return {"weights": dict(self.weights), "onnx_map": sites_dict(self.sites), "opset": self.opset,
                "renamed": dict(self.renamed)}

    def write(self, folder: Path) -> None:
        (folder / FILE).write_bytes(self.proto)

    @classmethod
    def from_entry(cls, entry: Entry) -> Structure:
        """The structure a store entry holds, its payload checked (``FormatError``)."""
        o = Obj(entry.payload, WHERE)
        weights = o.words("weights")
        opset = o.int("opset")
        if opset is None:
            o.fail("opset", "expected an integer")
        sites = {name: OnnxSite.read(Obj(site, WHERE, f"onnx_map.{name[:60]}"))
                 for name, site in (o.free("onnx_map") or {}).items()}
        return cls(entry.path(FILE).read_bytes(), weights, sites, opset or 0, o.words("renamed"))


def with_availability(sites: dict[str, OnnxSite], available: set[str], folded: str) -> dict[str, OnnxSite]:
    """The layer map on the optimized graph: a value the optimizer folded away is ``folded``."""
    return {name: OnnxSite(SiteKind.FOLDED, s.value, reason=folded) if s.kind == SiteKind.VALUE
            and s.value not in available else s for name, s in sites.items()}


def capture(model: Any, module: Any) -> tuple[bytes, dict[str, str], dict[str, str]] | None:
    """(``model`` serialized without the initializers that are ``module``'s data, ``weights.data``: its
    parameters, buffers (persistent or not) and tensor attributes; initializer -> their name;
    ``Structure.renamed``). None where such an initializer holds other bytes than its namesake, or where a
    constant holds the model's data under another name: the structure would carry weights into a key that
    does not digest them."""
    import onnx_ir as ir
    import torch

    from gate.model.pristine import same_bytes
    from gate.model.weights import data

    state = data(module)
    held = {t.data_ptr() for t in state.values() if t.numel()}
    swapped: dict[str, Any] = {}
    for name, value in model.graph.initializers.items():
        tensor, const = state.get(name), value.const_value
        raw = getattr(const, "raw", None)  # the exporter wraps the torch tensor itself (TorchTensor)
        if tensor is None:
            if isinstance(raw, torch.Tensor) and raw.numel() and raw.data_ptr() in held:
                return None  # the model's data under another name: the op trace names it, not its bytes
            continue  # a constant of the graph's own (its bytes reach the probe's op trace): it stays
        if not isinstance(raw, torch.Tensor) or not same_bytes(raw, tensor.detach()):
            return None
        swapped[name] = const
        value.const_value = ir.ExternalTensor(PLACEHOLDER, 0, const.nbytes, const.dtype, shape=const.shape, name=name)
    renamed = _unshared(model.graph)
    try:
        proto = ir.serde.serialize_model(model)
    finally:
        _rename(model.graph, renamed)
        for name, const in swapped.items():
            model.graph.initializers[name].const_value = const
    return proto.SerializeToString(), {name: name for name in swapped}, renamed


def _values(graph: Any) -> list[Any]:
    """The graph's inputs and every operation's outputs (in subgraphs too), less the initializers."""
    import onnx_ir as ir

    nodes = ir.traversal.RecursiveGraphIterator(graph)
    values = [*graph.inputs, *(v for node in nodes for v in node.outputs)]
    return [v for v in values if graph.initializers.get(v.name) is not v]


def _unshared(graph: Any) -> dict[str, str]:
    """Each value named as an initializer renamed, new name -> old: the exporter names a weight by its
    state-dict key, which an operation's output may have too (buffer ``mean``, ``x.mean()``), and a
    serialized graph with one name declared twice does not load (``bind`` gives the names back)."""
    values = _values(graph)
    taken = {*graph.initializers, *(v.name for v in values)}
    renamed: dict[str, str] = {}
    for value in values:
        if value.name in graph.initializers:
            new = next(n for i in range(len(taken) + 1) if (n := f"{value.name}~{i}") not in taken)
            taken.add(new)
            renamed[new], value.name = value.name, new
    return renamed


def _rename(graph: Any, names: dict[str, str]) -> None:
    """The values ``names`` holds given back their exporter's names."""
    for value in _values(graph):
        value.name = names.get(value.name, value.name)


def bind(structure: Structure, module: Any, save: Callable[[Any, Path], None]) -> tuple[Path, tempfile.TemporaryDirectory[str]]:
    """The optimized graph of ``structure`` with ``module``'s weights, saved by ``save(model, path)``
    (the exporter's own writer) into a new folder. ``Unbindable`` when a left-out weight has no
    tensor of that name, shape and dtype in the module, or the exporter's classes are not there."""
    import onnx
    import onnx_ir as ir
    import torch

    try:
        from torch.onnx._internal.exporter._core import TorchTensor
    except ImportError as exc:  # another torch: export afresh
        raise Unbindable(f"torch's exporter has no TorchTensor ({exc})") from None
    from gate.model.weights import data

    model = ir.serde.deserialize_model(onnx.load_from_string(structure.proto))
    _rename(model.graph, structure.renamed)  # the graph a fresh export gives its optimizer
    state = data(module)
    for init, name in structure.weights.items():
        value, tensor = model.graph.initializers.get(init), state.get(name)
        if value is None or value.const_value is None or tensor is None:
            raise Unbindable(f"no tensor `{name}` for initializer `{init}`")
        bound = TorchTensor(tensor.detach(), name=init)
        if tuple(bound.shape) != tuple(value.const_value.shape) or bound.dtype != value.const_value.dtype:
            raise Unbindable(f"`{name}` is {bound.dtype}{list(bound.shape)}, the structure holds "
                             f"{value.const_value.dtype}{list(value.const_value.shape)}")
        value.const_value = bound
    left = [v.name for v in model.graph.initializers.values() if isinstance(v.const_value, ir.ExternalTensor)
            and Path(str(v.const_value.location)).name == PLACEHOLDER]
    if left:
        raise Unbindable(f"initializer `{left[0]}` is left without its weight")
    program = torch.onnx.ONNXProgram(model, None)
    program.optimize()  # the exporter's optimizer, as a fresh export runs it
    folder = tempfile.TemporaryDirectory(prefix="parity-gate-export-")
    path = Path(folder.name) / "model.onnx"
    save(program.model, path)
    return path, folder
