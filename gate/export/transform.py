"""Post-export transforms (``transform = "module:function"``: an ``onnx.ModelProto`` in, the one that
ships out), the user's code, run on every check unless the model declares what else it reads
(``transform-inputs``; ``gate.pipeline.stages``). A graph it returns that does not load
(``saved.refusal``) is an export failure."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx

from gate.config import ModelSpec
from gate.core.failure import ModelError
from gate.core.refs import resolve
from gate.core.runs import OnnxSite
from gate.core.status import ErrorStatus, SiteKind
from gate.errors import ConfigError
from gate.export import layermap, saved
from gate.export.record import Graph, GraphFacts


def apply(spec: ModelSpec, proto: onnx.ModelProto, root: Path) -> onnx.ModelProto:
    fn = resolve(spec.transform, root, f"{spec.where}.transform")
    try:
        out = fn(proto)
    except Exception as exc:
        raise ModelError.of(f"model `{spec.name}`: transform `{spec.transform}` raised {type(exc).__name__}: {exc}",
                            ErrorStatus.EXPORT_FAIL, exc) from None
    if not isinstance(out, onnx.ModelProto):
        raise ConfigError(f"`{spec.where}.transform`: `{spec.transform}` returned {type(out).__name__}, "
                          "not an onnx.ModelProto")
    return out


def mark_removed(sites: dict[str, OnnxSite], shipped: set[str], transform: str) -> dict[str, OnnxSite]:
    """The layer map on the transformed graph: a value the transform removed or renamed is absent."""
    why = f"removed by the transform `{transform}`"
    return {name: OnnxSite(SiteKind.ABSENT, s.value, reason=why) if s.kind == SiteKind.VALUE and s.value not in shipped
            else s for name, s in sites.items()}


def ship(spec: ModelSpec, exported: Graph, root: Path) -> Graph:
    """The transform run on the exported graph: the graph that ships, in a folder of its own."""
    assert spec.transform is not None
    out = apply(spec, saved.load_model(exported.path), root)
    folder = tempfile.TemporaryDirectory(prefix="parity-gate-shipped-")
    path = saved.save_proto(out, Path(folder.name) / saved.MODEL)
    del out
    proto = saved.load_graph(path)
    why = saved.refusal(path, proto, full_check=False)  # what ONNX Runtime loads ships
    if why is not None:
        why = f"the graph transform `{spec.transform}` returns does not load: {why}"
        raise ModelError(f"model `{spec.name}`: {why}", ErrorStatus.EXPORT_FAIL)
    values, transform = layermap.available_values(proto), spec.transform
    base = exported.facts
    facts = GraphFacts.of(proto, base.exporter, base.fallback, base.opset)
    sites = mark_removed(exported.sites, values, transform) if exported.sites is not None else None
    mapper: Callable[[list[Any]], dict[str, OnnxSite]] | None = None
    if exported.mapper is not None:
        first = exported.mapper
        mapper = lambda records: mark_removed(first(records), values, transform)  # noqa: E731
    return Graph.of_file(path, facts, sites, [folder, *exported.folders], mapper)
