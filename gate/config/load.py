"""Find and read the configuration file: ``[tool.parity-gate]`` in ``pyproject.toml``, or
``parity-gate.toml`` (the same table, or its keys at top level)."""

from __future__ import annotations

import sys
from pathlib import Path

from gate.config.parse import parse
from gate.config.reader import DISK, Files
from gate.config.types import Config
from gate.core.files import PYPROJECT, STANDALONE
from gate.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def find_config(explicit: Path | None, cwd: Path | None = None) -> Path:
    """The config file: ``explicit``, else the nearest folder from ``cwd`` up that has pyproject.toml
    with [tool.parity-gate] (preferred) or parity-gate.toml. The search stops at the repository root
    (a folder holding ``.git``) or the filesystem root: a config above the repository is not its own."""
    if explicit is not None:
        if explicit.is_dir():
            raise ConfigError(f"config file `{explicit}` is a folder: pass the file (its pyproject.toml or "
                              "parity-gate.toml)")
        if not explicit.is_file():
            raise ConfigError(f"config file `{explicit}` does not exist")
        return explicit
    start = (cwd or Path.cwd()).absolute()
    top = None
    for folder in (start, *start.parents):
        found = config_in(folder)
        if found is not None:
            return found
        if (folder / ".git").exists():
            top = folder
            break
    where = f"{start} or a folder above it" + (f" up to the repository root {top}" if top and top != start else "")
    raise ConfigError(f"no configuration found in {where}: add a [tool.parity-gate] section to pyproject.toml "
                      "or create parity-gate.toml (docs/configuration.md; `parity-gate init` writes one), or "
                      "pass --config PATH")


def config_in(folder: Path, files: Files = DISK) -> Path | None:
    """The config file of ``folder``: pyproject.toml with [tool.parity-gate] first, else parity-gate.toml."""
    pyproject = folder / PYPROJECT
    if files.is_file(pyproject):
        try:
            data = tomllib.loads(files.read_text(pyproject))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{pyproject}: invalid TOML ({exc})") from None
        if "parity-gate" in data.get("tool", {}):
            return pyproject
    standalone = folder / STANDALONE
    return standalone if files.is_file(standalone) else None


def load_config(path: Path, text: str | None = None, files: Files = DISK) -> Config:
    """The validated config of ``path`` (read from ``text`` instead, when given: a config about to be written;
    ``files``: where it and the files it names are read)."""
    try:
        data = tomllib.loads(files.read_text(path) if text is None else text)
    except FileNotFoundError:
        raise ConfigError(f"config file `{path}` does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc})") from None
    if path.name == PYPROJECT:
        section = data.get("tool", {}).get("parity-gate")
        prefix = "tool.parity-gate"
        if section is None:
            raise ConfigError(f"{path}: no [tool.parity-gate] section")
    else:
        # parity-gate.toml may use the same [tool.parity-gate] table or put the keys at top level.
        section = data.get("tool", {}).get("parity-gate", data)
        prefix = "tool.parity-gate" if "tool" in data else ""
    return parse(section, path, prefix, files)
