"""ONNX Runtime distributions: which one is installed, which one Python imports, and leaving one.
``onnxruntime-gpu``, ``-openvino``, ... all install the same ``onnxruntime`` package, so two in one
environment overwrite each other's files. Standard library only: the action runs it as a script,
``python gate/github/ortdist.py ensure onnxruntime-gpu`` (exit 2 if another stays).
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import subprocess
import sys

DISTRIBUTIONS = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino", "onnxruntime-directml",
                 "onnxruntime-rocm", "onnxruntime-migraphx", "onnxruntime-qnn", "onnxruntime-training")
def _normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def installed(path: list[str] | None = None) -> dict[str, str]:
    """Every ONNX Runtime distribution installed on ``path`` (default ``sys.path``): name -> version."""
    out: dict[str, str] = {}
    for dist in md.distributions(path=path or sys.path):
        name = _normalize(dist.metadata["Name"] or "")
        if name in DISTRIBUTIONS and name not in out:
            out[name] = dist.version
    return dict(sorted(out.items()))


def imported() -> str | None:
    """The distribution whose files ``import onnxruntime`` loads (found without importing it)."""
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.origin:
        return None
    origin = os.path.realpath(spec.origin)
    for dist in md.distributions():
        name = _normalize(dist.metadata["Name"] or "")
        if name in DISTRIBUTIONS and os.path.realpath(str(dist.locate_file("onnxruntime/__init__.py"))) == origin:
            if any(str(f).replace("\\", "/") == "onnxruntime/__init__.py" for f in dist.files or ()):
                return name
    return None


def conflict(found: dict[str, str]) -> str | None:
    """The warning for more than one distribution in one environment (None: at most one)."""
    if len(found) < 2:
        return None
    names = ", ".join(f"{n} {v}" for n, v in found.items())
    return (f"{len(found)} ONNX Runtime distributions are installed ({names}): they overwrite each other's "
            "files; uninstall all of them and install the one you need")


def distribution_name(spec: str) -> str:
    """``onnxruntime-gpu`` for ``onnxruntime-gpu==1.23.2`` (a requirement specifier)."""
    for i, c in enumerate(spec):
        if c in "<>=!~;[ @":
            return _normalize(spec[:i])
    return _normalize(spec)


def ensure(wanted: str) -> int:
    """Leave ``wanted`` the only distribution in this environment: uninstall the others and, when
    one was there, reinstall ``wanted`` (the other's uninstall removed shared files)."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    found = installed()
    others = [n for n in found if n != wanted]
    if others:
        print(f"removing {', '.join(others)}: only {wanted} may provide onnxruntime here", file=sys.stderr)
        subprocess.run([*pip, "uninstall", "-y", *others], check=False)
        if wanted in found:
            subprocess.run([*pip, "install", "--force-reinstall", "--no-deps", f"{wanted}=={found[wanted]}"],
                           check=False)
    found = installed()
    if list(found) != [wanted]:
        have = ", ".join(found) or "none"
        print(f"::error title=parity-gate::expected {wanted} as the only ONNX Runtime distribution, found: {have}"
              " (one outside this environment, e.g. python-path's own, cannot be removed here: uninstall it there "
              "or set the onnxruntime input to none)", file=sys.stderr)
        return 2
    print(f"ONNX Runtime distribution: {wanted} {found[wanted]}")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "ensure":
        return ensure(distribution_name(argv[1]))
    if argv == ["list"]:
        for name, version in installed().items():
            print(f"{name} {version}")
        return 0
    print("usage: ortdist.py ensure DISTRIBUTION | list", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
