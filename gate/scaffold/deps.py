"""The versions ``init`` pins (the constraints file the action installs from), and the packages a
model's factory imports beyond parity-gate's own (its workflow installs them)."""

from __future__ import annotations

import ast
import importlib.util
from importlib import metadata
from pathlib import Path

from gate.core.versions import ORT_DISTRIBUTIONS
from gate.scaffold.diff_driver import top_level

RUNTIMES = ("torch", "onnx", "onnxscript")
# Imported by parity-gate itself or the Python standard library: never a model's own requirement.
OWN = {"torch", "onnx", "onnxscript", "onnxruntime", "numpy", "zstandard", "msgpack", "rich", "typer", "cffi",
       "parity-gate", "onnx-ir", "ml-dtypes", "sympy", "filelock", "jinja2", "networkx", "fsspec", "typing-extensions",
       "setuptools", "packaging", "pillow", "protobuf", "mpmath", "markupsafe", "triton"}


def installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def release(version: str) -> str:
    """``2.14.1+cpu`` pins as ``2.14.1``: the CPU and CUDA builds of one release both satisfy it."""
    return version.split("+", 1)[0]


def model_requirements(factory: str, root: Path) -> list[str]:
    """Distributions the factory's code imports that parity-gate does not (``torchvision``, ``timm``,
    ``transformers``...): the ``import`` statements of its module, and of the modules it imports from
    the repository, read without running them. The repository's own packages are never one, wherever
    they lie in it (a src/ layout installed editable)."""
    by_module = metadata.packages_distributions()
    found: set[str] = set()
    for top in _imported_tops(factory.split(":", 1)[0], root):
        found.update(d for d in by_module.get(top, ()) if d.lower().replace("_", "-") not in OWN)
    return sorted(found, key=str.lower)


def _imported_tops(module: str, root: Path, limit: int = 200) -> set[str]:
    """Top-level names imported by ``module`` and by the repository modules it imports (breadth first)."""
    tops: set[str] = set()
    queue, seen = [module], set[str]()
    repository = top_level(root) or root.resolve()
    while queue and len(seen) < limit:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        path = _local_file(name, root, repository)
        if path is None:
            top = name.split(".", 1)[0]
            if top == name or _local_file(top, root, repository) is None:  # not a name in a local package
                tops.add(top)
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                queue += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".") if package else []
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                if base:  # `from pkg import mod` may name a module of the package: follow both
                    queue += [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    return tops


def _local_file(module: str, root: Path, repository: Path) -> Path | None:
    """The repository file of ``module`` (a module or a package): under ``root``, or under the folder
    Python finds its top-level package in, when that lies in ``repository``; None when it lives elsewhere."""
    rel = Path(*module.split("."))
    for base in (root, *_own_bases(module.split(".", 1)[0], repository)):
        for candidate in (base / rel.with_suffix(".py"), base / rel / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _own_bases(top: str, repository: Path) -> list[Path]:
    """The folders in ``repository`` that Python finds package (or module) ``top`` in, found without
    importing it; an environment kept in the repository (.venv/.../site-packages) holds no code of its own."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    files = spec.submodule_search_locations or ([spec.origin] if spec.has_location and spec.origin else [])
    bases = [Path(f).resolve().parent for f in files]
    return [b for b in bases if b.is_relative_to(repository)
            and not {"site-packages", "dist-packages"} & set(b.relative_to(repository).parts)]


def constraints(extra: list[str]) -> str:
    """The constraints file: this machine's runtime versions, and those of the model's own packages."""
    lines = ["# Versions parity-gate's action installs (pip -c). The baselines were recorded with them;",
             "# change a version here and re-create the baselines in the same pull request.",
             "# Written by `parity-gate init`."]
    ort = next((d for d in ORT_DISTRIBUTIONS if installed(d)), None)
    for dist in (*RUNTIMES, *([ort] if ort else []), *extra):
        version = installed(dist)
        if version:
            lines.append(f"{dist}=={release(version)}")
    return "\n".join(lines) + "\n"
