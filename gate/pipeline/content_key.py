"""A model's content key: a digest of everything the stages after the probe read, in parts, and
per stage a key made of exactly the parts that stage reads (``STAGE_PARTS``, the stage table of
docs/verdict.md#stages). A stage's output is reused only under its own key: the export from the
store, the float64 reference from the baseline (``gate.pipeline.stages``).

The parts (``KeyPart``), each digested on its own so a changed key names what changed: ``code``
(the op trace of the probe's float32 forward and its module calls, ``gate.model.trace``), ``source``
(the model's own files: every module class's, the factory's, the inputs function's, and the
repository modules they use; and the factory's name), ``weights``, ``inputs``, ``export``,
``transform`` (its source, and the files and variables it declares it reads: ``transform-inputs``),
``reference``, ``versions`` (of the packages each stage runs, and of the packages the model's classes
come from) and ``gate`` (parity-gate's version and its own source). No torch here: the module and the
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gate
from gate import env, fingerprint
from gate.config import ModelSpec
from gate.core.refs import resolve
from gate.core.status import KeyPart, Stage
from gate.core.versions import version
from gate.core.versions import versions as gate_versions
from gate.errors import ConfigError
from gate.export import saved

if TYPE_CHECKING:
    import torch

PART = 16  # hex digits per part: a collision is a 1 in 2**64 chance
FORMAT = "parity-gate content key v2"

# The stage table: the parts each keyed stage reads, and the packages it runs (beside those the
# model's classes, or the transform, come from). The structure (the dynamo exporter's graph before
# optimization, without weights) reads all the export reads but the weights. The transform's key
# also digests the graph it reads, the export's output (``transform_key``), and exists only where
# the model declares what else the transform reads (``transform-inputs``): else it runs every time.
STAGE_PARTS: dict[Stage, tuple[KeyPart, ...]] = {
    Stage.STRUCTURE: (KeyPart.CODE, KeyPart.SOURCE, KeyPart.INPUTS, KeyPart.EXPORT, KeyPart.GATE),
    Stage.EXPORT: (KeyPart.CODE, KeyPart.SOURCE, KeyPart.WEIGHTS, KeyPart.INPUTS, KeyPart.EXPORT, KeyPart.GATE),
    Stage.TRANSFORM: (KeyPart.TRANSFORM, KeyPart.GATE),
    Stage.REFERENCE: (KeyPart.CODE, KeyPart.SOURCE, KeyPart.WEIGHTS, KeyPart.INPUTS, KeyPart.REFERENCE, KeyPart.GATE),
}
STAGE_PACKAGES: dict[Stage, tuple[str, ...]] = {
    Stage.STRUCTURE: ("python", "torch", "numpy", "onnx", "onnxscript", "onnx-ir"),
    Stage.EXPORT: ("python", "torch", "numpy", "onnx", "onnxscript", "onnx-ir"),
    Stage.TRANSFORM: ("python", "numpy", "onnx", "onnxruntime"),
    Stage.REFERENCE: ("python", "torch", "numpy"),
}


def _digest(value: Any, width: int | None = PART) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    full = hashlib.sha256(text.encode()).hexdigest()
    return full[:width] if width else full


def _file_digest(path: Path, exact: bool = False) -> str:
    """The file's bytes; source read with CRLF as LF (Python reads source that way; a Windows
    checkout of the same code keeps its key), a data file (``exact``) as it is."""
    data = path.read_bytes()
    return hashlib.sha256(data if exact else data.replace(b"\r\n", b"\n")).hexdigest()[:PART]


@dataclass(frozen=True)
class ContentKey:
    key: str  # sha256 over the parts
    parts: dict[str, str]  # KeyPart -> digest
    ops: int  # operations in the trace
    sources: dict[str, str] = field(default_factory=dict)  # module -> digest of its file
    versions: dict[str, str] = field(default_factory=dict)  # package -> version
    settings: dict[str, str] = field(default_factory=dict)  # "export.opset" -> "18", ...
    unseen: list[str] = field(default_factory=list)  # custom operations: seen by name only
    # Stage -> its key (``STAGE_PARTS``). The transform's, where it has one, is completed by the
    # graph it reads (``transform_key``).
    stages: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {"key": self.key, "parts": dict(self.parts), "ops": self.ops, "sources": dict(self.sources),
               "versions": dict(self.versions), "settings": dict(self.settings), "unseen": list(self.unseen)}
        if self.stages:
            out["stages"] = dict(self.stages)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ContentKey:
        """From a baseline's ``meta.content_key`` (the schema has checked it)."""
        return cls(d["key"], dict(d["parts"]), d["ops"], dict(d["sources"]), dict(d["versions"]),
                   dict(d["settings"]), list(d["unseen"]), dict(d.get("stages") or {}))

    def stage(self, stage: Stage) -> str | None:
        return self.stages.get(stage.value)

    def changed(self, recorded: ContentKey) -> list[KeyPart]:
        """The parts that differ from ``recorded``'s, in ``KeyPart`` order."""
        return [p for p in KeyPart if self.parts.get(p.value) != recorded.parts.get(p.value)]


@functools.lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
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
    """(distribution, version) of the installed package a top-level module comes from; None for the
    repository's own modules and the standard library."""
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
    return _dist_of(top) is None


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
            dist = _dist_of(name.split(".")[0])
            if dist is not None:
                packages[dist[0]] = dist[1]
    return sources, packages


def _model_modules(module: torch.nn.Module, spec: ModelSpec) -> set[str]:
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
    h = hashlib.sha256(path.read_bytes())
    try:
        extra = saved.data_files(saved.load_graph(path))
    except Exception:  # noqa: BLE001 - an unreadable artifact fails the export later, saying why
        extra = []
    for name in extra:
        data = path.parent / name
        h.update(name.encode() + b"\0" + (data.read_bytes() if data.is_file() else b"missing"))
    return h.hexdigest()[:PART]


FACTORY = "<factory>"  # the factory's reference among the source's modules (no module has this name)
ENV_PREFIX = "env:"  # a transform input that is an environment variable, not a file


def transform_inputs_digest(spec: ModelSpec, root: Path) -> str:
    """The declared inputs of the transform (``transform-inputs``): each file the globs match, by
    path relative to the config's folder and bytes, and each ``env:NAME`` by value. A glob that
    matches no file is a config error: a typo would leave a file the transform reads unkeyed."""
    h = hashlib.sha256(b"parity-gate transform inputs v1\n")
    for entry in spec.transform_inputs or ():
        if entry.startswith(ENV_PREFIX):
            name = entry[len(ENV_PREFIX):]
            value = env.declared(name)
            h.update(f"env {name}={'unset' if value is None else _digest(value, None)}\n".encode())
            continue
        files = sorted(p for p in root.glob(entry) if p.is_file())
        if not files:
            raise ConfigError(f"`{spec.where}.transform-inputs`: `{entry}` matches no file under {root}")
        for path in files:
            h.update(f"file {path.relative_to(root).as_posix()}={_file_digest(path, exact=True)}\n".encode())
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
        if spec.transform_inputs is not None:
            s["transform.inputs"] = transform_inputs_digest(spec, root)
    return s, packages


def _stage_versions(spec: ModelSpec) -> dict[str, str]:
    """The versions of the packages the stages run (``STAGE_PACKAGES``): torch and NumPy (probe,
    reference); the exporter's; ONNX Runtime where a transform may run it (its optimizer)."""
    v = gate_versions()
    out = {"python": platform.python_version(), "torch": v["torch"], "numpy": version("numpy"),
           "onnx": v["onnx"]}
    if spec.artifact is None:
        out.update({"onnxscript": v["onnxscript"], "onnx-ir": version("onnx-ir")})
    if spec.transform:
        out["onnxruntime"] = v["onnxruntime"]
    return {k: val or "absent" for k, val in out.items()}


def stage_keys(spec: ModelSpec, parts: dict[str, str], tools: dict[str, str], model_packages: dict[str, str],
                transform_packages: dict[str, str]) -> dict[str, str]:
    """Each keyed stage's key: its parts and the versions of what it runs, nothing else."""
    out = {}
    for stage, read in STAGE_PARTS.items():
        if stage == Stage.TRANSFORM and (not spec.transform or spec.transform_inputs is None):
            continue  # no transform, or one whose inputs the gate cannot see: it runs every time
        if stage == Stage.STRUCTURE and (spec.artifact is not None or spec.exporter != "dynamo"):
            continue  # a prebuilt file or the TorchScript exporter: no structure to bind weights into
        packages = transform_packages if stage == Stage.TRANSFORM else model_packages
        versions = {**packages, **{k: v for k, v in tools.items() if k in STAGE_PACKAGES[stage]}}
        out[stage.value] = _digest([FORMAT, stage.value, [parts[p.value] for p in read], versions], width=None)
    return out


def transform_key(content_key: ContentKey, graph_digest: str) -> str | None:
    """The transform's key: its part of the content key and the graph it reads (the export's
    output, by digest); None where the transform runs every time."""
    base = content_key.stage(Stage.TRANSFORM)
    return None if base is None else _digest([FORMAT, base, graph_digest], width=None)


def take(spec: ModelSpec, module: torch.nn.Module, input_names: list[str], root: Path, trace: str, ops: int,
         weights_digest: str, inputs_digest: str, unseen: list[str]) -> ContentKey:
    """The key of a built model whose probe traced ``trace`` (``ops`` operations)."""
    sources, packages = _closure(_model_modules(module, spec), root.resolve())
    if isinstance(spec.factory, str):  # two factories of a file: models only their exports may tell apart
        sources[FACTORY] = _digest(spec.factory)
    settings, transform_packages = _settings(spec, input_names, root.resolve())
    tools = _stage_versions(spec)
    versions = {**packages, **transform_packages, **tools}

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
    stages = stage_keys(spec, parts, tools, packages, transform_packages)
    return ContentKey(key, parts, ops, sources, versions, settings, list(unseen), stages)
