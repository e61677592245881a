"""What the action installs for each mode, from where, and the cache key of that environment.

The composite action runs this file before parity-gate is installed (standard library only) and
writes what it prints to GITHUB_OUTPUT: ``python gate/github/install.py`` (reads PG_* variables).
ONNX Runtime is one distribution, never two (they overwrite each other's files). On a hosted Linux
runner without a GPU, torch comes from PyTorch's CPU index (the default pulls gigabytes of CUDA). The
key names every input the environment depends on, including the contents of every requirements file,
so a pull request that bumps a line of ``requirements.txt`` never restores a stale environment.
"""

from __future__ import annotations

import hashlib
import os
import platform
import secrets
import shutil
import sys
from pathlib import Path

if __package__:
    from gate.github.pins import PinsError, pinned_copy
else:  # run as a script by the action, before parity-gate is installed: this folder is sys.path[0]
    from pins import PinsError, pinned_copy  # type: ignore[no-redef]

# Kept in step with pyproject.toml's extras (tests/unit/test_github_install.py checks it).
TORCH = ("torch>=2.5", "onnx>=1.16", "onnxscript>=0.2")
ONNX = ("onnx>=1.16",)
NEEDS = {
    "comment": (),
    "report": (),
    "collect": ONNX + ("<ort>",),
    "export": TORCH,
    "check": TORCH + ("<ort>",),
    "update-baseline": TORCH + ("<ort>",),
}
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
KEY_VERSION = "2"  # bump to drop every cached environment
# pip options whose value is a requirements file (read, and followed into its own -r/-c lines), and
# those whose value is a path whose contents pip installs from.
FILE_OPTIONS = ("-r", "--requirement", "-c", "--constraint")
EDITABLE_OPTIONS = ("-e", "--editable")  # its sources stay where they are: only its metadata is installed
PATH_OPTIONS = ("-f", "--find-links")
METADATA = ("pyproject.toml", "setup.py", "setup.cfg")
MAX_FILES, MAX_BYTES = 20_000, 512 * 2**20  # a local folder hashed past these is not cached at all
SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".tox", ".mypy_cache", ".pytest_cache"}


def onnxruntime_choice(choice: str, has_gpu: bool) -> str:
    """The distribution (or pinned spec) for the ``onnxruntime`` input: ``auto`` is the GPU build
    where the runner has an NVIDIA GPU (``nvidia-smi`` on the PATH), else the CPU build; ``cpu`` and
    ``gpu`` name one; anything else (a distribution, a pinned spec, ``none``) is taken as given."""
    choice = choice.strip() or "auto"
    if choice == "auto":
        choice = "gpu" if has_gpu else "cpu"
    return {"cpu": "onnxruntime", "gpu": "onnxruntime-gpu"}.get(choice, choice)


def ort_distribution(mode: str, spec: str) -> str:
    """The distribution name the install must leave alone in the venv ("" when the mode runs no
    ONNX graph or the Python given already has one)."""
    if "<ort>" not in NEEDS[mode] or spec == "none":
        return ""
    for i, c in enumerate(spec):
        if c in "<>=!~;[ @":
            return spec[:i].strip().lower().replace("_", "-")
    return spec.lower().replace("_", "-")


def packages(mode: str, onnxruntime: str) -> list[str]:
    """Requirement specifiers for ``mode``; ``onnxruntime`` is the distribution (or "none": the
    Python given already has one)."""
    out = []
    for spec in NEEDS[mode]:
        if spec == "<ort>":
            if onnxruntime != "none":
                out.append(onnxruntime if any(c in onnxruntime for c in "<>=!~") else f"{onnxruntime}>=1.18")
        else:
            out.append(spec)
    return out


def torch_build(mode: str, choice: str, env: dict[str, str], has_gpu: bool) -> str:
    """``cpu``, ``default`` (the index's own resolve) or ``none`` (the mode installs no torch)."""
    if not any(p.startswith("torch>=") for p in packages(mode, "none")):
        return "none"
    if choice in ("cpu", "default"):
        return choice
    hosted = env.get("RUNNER_ENVIRONMENT") == "github-hosted"
    return "cpu" if hosted and env.get("RUNNER_OS") == "Linux" and not has_gpu else "default"


def source_digest(root: Path) -> str:
    """parity-gate's own sources as the action holds them: its version, exactly."""
    h = hashlib.sha256()
    files = [root / "pyproject.toml", root / "setup.py"]
    files += sorted(p for p in (root / "gate").rglob("*") if p.suffix in (".py", ".c", ".h") and p.is_file())
    for path in files:
        if path.is_file():
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _options(words: list[str]) -> list[tuple[str, str]]:
    """(``file`` | ``editable`` | ``path``, value) for each file or local path that pip ``words`` name."""
    out, it = [], iter(words)
    for word in it:
        for kind, options in (("file", FILE_OPTIONS), ("editable", EDITABLE_OPTIONS), ("path", PATH_OPTIONS)):
            option = next((o for o in options if word == o or word.startswith(o + "=")
                           or (len(o) == 2 and word.startswith(o) and len(word) > 2)), None)
            if option:
                value = word[len(option):].lstrip("=") or next(it, "")
                out.append((kind, value))
                break
        else:
            if not word.startswith("-"):
                out.append(("path", word))  # a package name, or a local folder or archive
    return out


class _Digest:
    """sha256 over every file the requirements name, each once, under the name it was given by."""

    def __init__(self) -> None:
        self.h, self.seen, self.files, self.bytes = hashlib.sha256(), set(), 0, 0
        self.unbounded = ""

    def add(self, kind: str, value: str, base: Path) -> None:
        value = value.removeprefix("file://")
        path = (base / value) if value and not os.path.isabs(value) else Path(value)
        if not value or "://" in value or not path.exists() or path.resolve() in self.seen:
            return  # a package name or URL: the words say it already
        self.seen.add(path.resolve())
        if kind == "editable" and path.is_dir():
            for name in METADATA:
                if (path / name).is_file():
                    self._file(path / name, f"{kind}:{value}/{name}")
        elif path.is_dir():
            self._folder(path)
        else:
            self._file(path, f"{kind}:{value}")
            if kind == "file":  # its -r/-c lines: pip reads an included file relative to the one including it
                for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                    words = line.split("#", 1)[0].split() if not line.lstrip().startswith("#") else []
                    for k, v in _options(words):
                        self.add(k, v, path.parent)

    def _file(self, path: Path, name: str) -> None:
        data = path.read_bytes()
        self.files, self.bytes = self.files + 1, self.bytes + len(data)
        self.h.update(name.encode() + b"\0" + data + b"\0")

    def _folder(self, root: Path) -> None:
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(names):
                if self.files >= MAX_FILES or self.bytes >= MAX_BYTES:
                    self.unbounded = str(root)
                    return
                path = Path(folder) / name
                if path.is_file() and not name.endswith((".pyc", ".so")):
                    self._file(path, path.relative_to(root.parent).as_posix())


def requirements_digest(extra_pip_args: str, constraints: str, cwd: Path) -> tuple[str, str]:
    """A digest of the contents of every file the requirements name (relative paths from ``cwd``, where
    pip runs), and the folder too large to hash ("" when none: then the environment is not cached)."""
    d = _Digest()
    if constraints:
        d.add("file", constraints, cwd)
    for kind, value in _options(extra_pip_args.split()):  # install.sh splits the input on whitespace
        d.add(kind, value, cwd)
    return d.h.hexdigest()[:16], d.unbounded


def plan(env: dict[str, str], python: str = sys.executable, has_gpu: bool | None = None) -> dict[str, str]:
    mode = env["PG_MODE"]
    gpu = shutil.which("nvidia-smi") is not None if has_gpu is None else has_gpu
    ort = onnxruntime_choice(env.get("PG_ONNXRUNTIME") or "auto", gpu)
    build = torch_build(mode, env.get("PG_TORCH_BUILD") or "auto", env, gpu)
    index = env.get("PG_TORCH_INDEX_URL") or CPU_INDEX
    pkgs = packages(mode, ort)
    index_args = f"--extra-index-url {index}" if build == "cpu" else ""
    constraints = env.get("PG_CONSTRAINTS", "")
    pinned = bool(constraints) and Path(constraints).is_file()
    files, unbounded = requirements_digest(env.get("PG_EXTRA_PIP_ARGS", ""), constraints if pinned else "", Path.cwd())
    inputs = "\n".join([KEY_VERSION, " ".join(pkgs), index_args, constraints and "constraints", env.get(
        "PG_EXTRA_PIP_ARGS", ""), env.get("PG_SYSTEM_SITE_PACKAGES", ""), files])
    # Too large to hash: a key no later run shares, so the cache never restores it in place of an install.
    requirements = hashlib.sha256(inputs.encode()).hexdigest()[:16] if not unbounded else secrets.token_hex(8)
    interpreter = f"{platform.python_implementation()}-{platform.python_version()}"
    where = hashlib.sha256(os.path.abspath(python).encode()).hexdigest()[:8]
    action = source_digest(Path(env.get("GITHUB_ACTION_PATH") or Path(__file__).resolve().parents[2]))
    os_arch = f"{env.get('RUNNER_OS') or platform.system()}-{env.get('RUNNER_ARCH') or platform.machine()}"
    tier = "core" if not pkgs else mode
    key = f"parity-gate-env-{os_arch}-{interpreter}-{where}-{tier}-{action}-{requirements}"
    return {"key": key, "packages": " ".join(pkgs), "index-args": index_args, "torch-build": build,
            "constraints": constraints if pinned else "", "python-version": platform.python_version(),
            "unhashed": unbounded, "onnxruntime": ort_distribution(mode, ort)}


def main() -> None:
    env = dict(os.environ)
    constraints = env.get("PG_CONSTRAINTS", "")
    if constraints and not Path(constraints).is_file():
        print(f"::error title=parity-gate::constraints file `{constraints}` does not exist", file=sys.stderr)
        raise SystemExit(2)
    if constraints and env["PG_MODE"] == "comment":  # the job that holds the write token
        try:
            env["PG_CONSTRAINTS"] = pinned_copy(constraints, os.path.join(env.get("RUNNER_TEMP") or ".", "parity-gate",
                                                                          "constraints-pins.txt"))
        except PinsError as e:
            print(f"::error title=parity-gate::{e}", file=sys.stderr)
            raise SystemExit(2) from None
    out = plan(env)
    for name, value in out.items():
        print(f"{name}={value}")
    if out["unhashed"]:
        print(f"::warning title=parity-gate::{out['unhashed']} holds more than {MAX_FILES:,} files or "
              f"{MAX_BYTES // 2**20} MiB: its contents cannot be part of the cache key, so this environment is "
              "installed afresh", file=sys.stderr)
    print(f"parity-gate environment for mode {env['PG_MODE']}: {out['packages'] or 'core only'}; torch build "
          f"{out['torch-build']}; ONNX Runtime {out['onnxruntime'] or 'none'}; constraints "
          f"{out['constraints'] or 'none'}; key {out['key']}", file=sys.stderr)


if __name__ == "__main__":
    main()
