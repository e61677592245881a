"""A model's content key: a digest of everything the float64 reference and the exported graph are
functions of. Equal keys, equal numbers: ``check`` then takes the reference's fingerprints from
the baseline and the graph from the export cache (``gate.commands.reuse``; docs/verdict.md#reuse-an-unchanged-model-costs-less).

The key is made of parts (``KeyPart``), each digested on its own so a changed key names what
changed: ``code`` (the op trace of the probe's float32 forward, ``gate.model.trace``), ``source``
(the model's own files: every module class's, the factory's, the inputs function's, and the
repository modules they use), ``weights``, ``inputs``, ``export``, ``transform``, ``reference``,
``versions`` (of the packages each reused stage runs, and of the packages the model's classes come
from) and ``gate`` (parity-gate's version and its own source). No torch here: the module and the
probe come in as arguments.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import sys
import sysconfig
import types
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import gate
from gate import fingerprint
from gate.config import ModelSpec
from gate.core.refs import resolve
from gate.core.status import KeyPart
from gate.core.versions import versions as gate_versions

PART = 16  # hex digits per part: a collision is a 1 in 2**64 chance
FORMAT = "parity-gate content key v1"


def _digest(value: Any, width: int | None = PART) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    full = hashlib.sha256(text.encode()).hexdigest()
    return full[:width] if width else full


def _file_digest(path: Path) -> str:
    """The file's bytes with CRLF read as LF (Python reads source that way; a Windows checkout of
    the same code keeps its key)."""
    return hashlib.sha256(path.read_bytes().replace(b"\r\n", b"\n")).hexdigest()[:PART]


@dataclass(frozen=True)
class ContentKey:
    key: str  # sha256 over the parts
    parts: dict[str, str]  # KeyPart -> digest
    ops: int  # operations in the trace
    sources: dict[str, str] = field(default_factory=dict)  # module -> digest of its file
    versions: dict[str, str] = field(default_factory=dict)  # package -> version
    settings: dict[str, str] = field(default_factory=dict)  # "export.opset" -> "18", ...
    unseen: list[str] = field(default_factory=list)  # custom operations: seen by name only

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "parts": dict(self.parts), "ops": self.ops, "sources": dict(self.sources),
                "versions": dict(self.versions), "settings": dict(self.settings), "unseen": list(self.unseen)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ContentKey:
        """From a baseline's ``meta.content_key`` (the schema has checked it)."""
        return cls(d["key"], dict(d["parts"]), d["ops"], dict(d["sources"]), dict(d["versions"]),
                   dict(d["settings"]), list(d["unseen"]))

    def changed(self, recorded: ContentKey) -> list[KeyPart]:
        """The parts that differ from ``recorded``'s, in ``KeyPart`` order."""
        return [p for p in KeyPart if self.parts.get(p.value) != recorded.parts.get(p.value)]


@functools.lru_cache(maxsize=1)
def _distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()  # scans every installed package: the last resort


def _named(top: str) -> tuple[str, str] | None:
    """The distribution named like the top-level module that ships it (torchvision, transformers):
    found without scanning every installed package."""
    for name in dict.fromkeys((top, top.replace("_", "-"))):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        tops = (dist.read_text("top_level.txt") or "").split()
        if top in tops or any(f.parts and f.parts[0] in (top, f"{top}.py") for f in dist.files or ()):
            return dist.metadata["Name"], dist.version
    return None


@functools.cache
def _dist_of(top: str) -> tuple[str, str] | None:
    if top in sys.stdlib_module_names:
        return None
    found = _named(top)
    if found is not None:
        return found
    for dist in _distributions().get(top, []):
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def _dist_version(module: str) -> tuple[str, str] | None:
    """(distribution, version) of the installed package a module comes from; None for the repository's
    own modules and the standard library."""
    return _dist_of(module.split(".")[0])


_STDLIB = tuple(str(Path(p).resolve()) for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})


def _module_file(name: str) -> Path | None:
    mod = sys.modules.get(name)
    file = getattr(mod, "__file__", None)
    return Path(file).resolve() if file else None


def _own(name: str, root: Path) -> bool:
    """Whether a module's file is part of the key's ``source``: the repository's (an editable install
    included: its version does not move with its code), or any file no installed package version
    stands for; not parity-gate's, torch's or the standard library's."""
    top = name.split(".")[0]
    if top in ("gate", "torch", "builtins") or name in sys.builtin_module_names:
        return False
    file = _module_file(name)
    if file is None:
        return False
    if file.is_relative_to(root):
        return True
    if str(file).startswith(_STDLIB) and "-packages" not in str(file):
        return False
    return _dist_version(name) is None


def _uses(name: str) -> set[str]:
    """Modules whose objects a module's globals hold (``import x``, ``from x import f``)."""
    mod = sys.modules.get(name)
    out: set[str] = set()
    for value in vars(mod).values() if mod is not None else ():
        if isinstance(value, types.ModuleType):
            out.add(value.__name__)
        elif isinstance(value, (type, types.FunctionType)) and isinstance(getattr(value, "__module__", None), str):
            out.add(value.__module__)
    return out


def _closure(roots: set[str], root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(own module -> file digest, package -> version) of ``roots`` and the own modules they use,
    transitively: a helper in another file of the repository is source of the model too."""
    sources: dict[str, str] = {}
    packages: dict[str, str] = {}
    todo, seen = sorted(roots), set(roots)
    while todo:
        name = todo.pop()
        if _own(name, root):
            file = _module_file(name)
            sources[name] = _file_digest(file) if file is not None and file.is_file() else "no-file"
            for used in sorted(_uses(name) - seen):
                seen.add(used)
                todo.append(used)
        elif name.split(".")[0] not in ("gate", "torch", "builtins"):
            dist = _dist_version(name)
            if dist is not None:
                packages[dist[0]] = dist[1]
    return sources, packages


def _model_modules(module, spec: ModelSpec) -> set[str]:
    """The modules the model's classes (their bases included), factory and inputs come from."""
    names: set[str] = set()
    for m in module.modules():
        for cls in type(m).__mro__:
            names.add(cls.__module__)
    for ref in (spec.factory, spec.inputs):
        if isinstance(ref, str) and ":" in ref:
            names.add(ref.split(":")[0])
    return names


@functools.lru_cache(maxsize=1)
def _gate_source() -> str:
    """parity-gate's own source (its Python files and the C kernel's), for a checkout whose version
    string stays while its code changes."""
    root = Path(gate.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".c", ".h") and p.is_file()):
        h.update(f"{path.relative_to(root).as_posix()}\0{_file_digest(path)}\n".encode())
    return h.hexdigest()[:PART]


def _file_set_digest(path: Path) -> str:
    """A prebuilt artifact: its bytes and those of its external data files."""
    from gate.export import saved

    h = hashlib.sha256(path.read_bytes())
    try:
        extra = saved.data_files(saved.load_graph(path))
    except Exception:  # noqa: BLE001 - an unreadable artifact fails the export later, saying why
        extra = []
    for name in extra:
        data = path.parent / name
        h.update(name.encode() + b"\0" + (data.read_bytes() if data.is_file() else b"missing"))
    return h.hexdigest()[:PART]


def _settings(spec: ModelSpec, input_names: list[str], root: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(settings by name, package versions the transform uses)."""
    s: dict[str, str] = {"reference.promotion": str(spec.reference_promotion), "reference.gradients": str(spec.gradients),
                         "reference.fingerprint": json.dumps(fingerprint.parameters(), sort_keys=True)}
    if spec.gradients:
        s["reference.seed"] = str(spec.seed)  # the loss's random direction
    s["export.inputs"] = json.dumps(input_names)
    if spec.artifact is not None:
        s["export.artifact"] = _file_set_digest(Path(spec.artifact)) if Path(spec.artifact).is_file() else "missing"
    else:
        s["export.exporter"] = spec.exporter
        s["export.opset"] = str(spec.opset) if spec.opset else "default"
        s["export.dynamic"] = json.dumps({k: {str(d): n for d, n in v.items()} for k, v in spec.dynamic_shapes.items()},
                                         sort_keys=True)
    packages: dict[str, str] = {}
    if spec.transform:
        resolve(spec.transform, root, f"{spec.where}.transform")  # imported now: its file, and what it uses
        sources, packages = _closure({spec.transform.split(":")[0]}, root)
        s["transform.ref"] = spec.transform
        s["transform.source"] = _digest(sources)
    return s, packages


def _stage_versions(spec: ModelSpec) -> dict[str, str]:
    """The versions each reused stage runs: torch and NumPy (probe, reference); the exporter's
    packages; ONNX Runtime where a transform may run it (its optimizer)."""
    v = gate_versions()
    out = {"python": platform.python_version(), "torch": v["torch"], "numpy": _version("numpy"),
           "onnx": v["onnx"]}
    if spec.artifact is None:
        out.update({"onnxscript": v["onnxscript"], "onnx-ir": _version("onnx-ir")})
    if spec.transform:
        out["onnxruntime"] = v["onnxruntime"]
    return {k: val or "absent" for k, val in out.items()}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def take(spec: ModelSpec, module, input_names: list[str], root: Path, trace: str, ops: int,
         weights_digest: str, inputs_digest: str, unseen: list[str]) -> ContentKey:
    """The key of a built model whose probe traced ``trace`` (``ops`` operations)."""
    sources, packages = _closure(_model_modules(module, spec), root.resolve())
    settings, transform_packages = _settings(spec, input_names, root.resolve())
    versions = {**packages, **transform_packages, **_stage_versions(spec)}

    def subset(prefix: str) -> dict[str, str]:
        return {k: v for k, v in settings.items() if k.startswith(prefix)}

    parts = {
        KeyPart.CODE.value: _digest([trace, ops]),
        KeyPart.SOURCE.value: _digest(sources),
        KeyPart.WEIGHTS.value: _digest(weights_digest),
        KeyPart.INPUTS.value: _digest(inputs_digest),
        KeyPart.EXPORT.value: _digest(subset("export.")),
        KeyPart.TRANSFORM.value: _digest(subset("transform.")),
        KeyPart.REFERENCE.value: _digest(subset("reference.")),
        KeyPart.VERSIONS.value: _digest(versions),
        KeyPart.GATE.value: _digest([gate.__version__, _gate_source()]),
    }
    key = _digest([FORMAT, parts], width=None)
    return ContentKey(key, parts, ops, sources, versions, settings, list(unseen))
