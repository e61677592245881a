"""A graph on disk as the stages hand it on (exported, or as shipped after the transform), with what a
run records of it (``GraphFacts``), its digest, its layer map and its store entry's codec. No torch,
and onnx only when a graph is read: the commands that judge and comment import this without either.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from gate.core.background import Background
from gate.core.fields import Obj
from gate.core.runs import OnnxSite, sites_dict

if TYPE_CHECKING:
    import onnx

    from gate.store import Entry

HEX64 = re.compile(r"[0-9a-f]{64}\Z")
WHERE = "store entry"
# gate.export.saved's file names, named here: reading an entry needs no onnx
MODEL, DATA = "model.onnx", "model.onnx.data"


@dataclass(frozen=True)
class GraphFacts:
    """How the graph was made and what it holds: what the baseline records of it."""

    exporter: str
    fallback: str | None  # why dynamo was not used, when it was not
    opset: int
    op_types: list[str]
    dynamic_dims: dict[str, dict[str, str]] | None
    precision: str  # what it computes in (``graph.precision``)
    lowered: list[str] = field(default_factory=list)  # what computes below float32 (``graph.lowered``)

    @classmethod
    def of(cls, proto: onnx.ModelProto, exporter: str, fallback: str | None, opset: int) -> GraphFacts:
        from gate.export import graph

        return cls(exporter, fallback, opset, graph.op_types(proto), graph.dynamic_dims(proto) or None,
                   graph.precision(proto), graph.lowered(proto))


@dataclass
class Graph:
    """A graph file (its external data beside it) and what stays alive while it is used."""

    # Its store entry's weights file: the graph's digest covers its bytes (``unproven``), not the store's.
    proves: ClassVar[frozenset[str]] = frozenset({DATA})

    path: Path
    facts: GraphFacts
    digest: Background[str]  # ``graph.file_digest`` of ``path``, hashed on a thread
    sites: dict[str, OnnxSite] | None  # layer -> value here; None until mapped (no probe ran: after the reference)
    folders: list[tempfile.TemporaryDirectory[str]] = field(default_factory=list, repr=False)
    # Where ``sites`` is None: the layer map from the reference's records (it holds the export's call map).
    mapper: Callable[[list[Any]], dict[str, OnnxSite]] | None = field(default=None, repr=False)

    @classmethod
    def of_file(cls, path: Path, facts: GraphFacts, sites: dict[str, OnnxSite] | None,
                folders: list[tempfile.TemporaryDirectory[str]],
                mapper: Callable[[list[Any]], dict[str, OnnxSite]] | None = None) -> Graph:
        from gate.export import graph

        return cls(path, facts, Background(graph.file_digest, path), sites, folders, mapper)

    def layer_map(self, records: list[Any]) -> dict[str, OnnxSite]:
        """Each layer's value here: as mapped at the export, or now from ``records``."""
        if self.sites is not None:
            return dict(self.sites)
        assert self.mapper is not None
        return self.mapper(records)

    def output_digest(self) -> str:
        """The stage's output, digested: the graph (without metadata that names source files) and
        its layer map. Two runs that agree on it produced the same output."""
        return _output_digest(self.digest.result(), self.sites or {})

    def differs_from(self, entry: Entry) -> str | None:
        """None when ``entry`` holds this very output, told from its files (never from what its
        manifest claims); else how they differ. ``Corrupt`` where its files are not what it records."""
        stored = Graph.from_entry(entry)
        stored.unproven(entry)
        file_digest = stored.digest.result()
        if file_digest != self.digest.result():
            return f"the graph differs (digest {self.digest.result()[:12]}, stored {file_digest[:12]})"
        if _output_digest(file_digest, stored.sites or {}) != self.output_digest():
            return "the layer map differs"
        return None

    def payload(self) -> dict[str, Any]:
        f = self.facts
        return {"exporter": f.exporter, "fallback": f.fallback, "opset": f.opset, "op_types": f.op_types,
                "dynamic_dims": f.dynamic_dims, "precision": f.precision, "lowered": f.lowered,
                "graph_digest": self.digest.result(), "onnx_map": sites_dict(self.sites or {})}

    def write(self, folder: Path) -> None:
        """The files of a store entry: the graph and its external data (hard-linked where possible)."""
        from gate.export import saved

        saved.copy_model(self.path, folder)

    @classmethod
    def from_entry(cls, entry: Entry) -> Graph:
        """The graph a store entry holds, every field of its payload checked (``FormatError``)."""
        o = Obj(entry.payload, WHERE)
        digest = o.str("graph_digest")
        if not HEX64.match(digest):
            o.fail("graph_digest", "is not a sha256")
        if o.int("opset") is None:
            o.fail("opset", "expected an integer")
        if not isinstance(entry.payload.get("op_types"), list):
            o.fail("op_types", "expected an array")
        dims = o.free("dynamic_dims")
        for name, d in (dims or {}).items():
            if not isinstance(d, dict) or not all(isinstance(v, str) for v in d.values()):
                o.fail("dynamic_dims", f"{name[:60]!r}: expected an object of names")
        facts = GraphFacts(o.str("exporter"), o.opt_str("fallback"), o.int("opset") or 0, o.strs("op_types"),
                           dims or None, o.str("precision"), o.strs("lowered"))
        sites = {name: OnnxSite.read(Obj(site, WHERE, f"onnx_map.{name[:60]}"))
                 for name, site in (o.free("onnx_map") or {}).items()}
        # its digest from the file, never from what the payload claims
        return cls.of_file(entry.path(MODEL), facts, sites, [])

    def unproven(self, entry: Entry, recorded: str | None = None) -> str | None:
        """None when this graph (read from ``entry``'s files) is, where given, the graph digest its baseline
        records under this key (``recorded``); else how it differs (the key gave another graph: an alarm).
        Raises ``Corrupt`` where the files do not hold what the entry records (the payload's graph digest,
        the manifest's output digest): damaged, or changed without their entry, as the store's own
        checks (its weights file is recorded by size only: this is its proof)."""
        from gate.store.entry import Corrupt

        found = self.digest.result()
        if found != entry.payload.get("graph_digest"):
            claimed = str(entry.payload.get("graph_digest"))[:12]
            raise Corrupt(f"the graph in {MODEL} and its weights digest to {found[:12]}, "
                          f"its entry records {claimed}")
        if self.output_digest() != entry.digest:
            raise Corrupt("the stored graph and layer map are not the output its manifest records")
        if recorded and found != recorded:
            return f"the stored graph's digest is {found[:12]}, the baseline's under this key {recorded[:12]}"
        return None


def _output_digest(graph_digest: str, sites: dict[str, OnnxSite]) -> str:
    h = hashlib.sha256(b"parity-gate graph output v1\n")
    h.update(graph_digest.encode())
    h.update(json.dumps(sites_dict(sites), sort_keys=True).encode())
    return h.hexdigest()
