"""What the commands share: a model's baseline, the command that re-creates it, the policy."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from gate import fingerprint
from gate.config import Config, ModelSpec, find_config
from gate.core.status import ModelStatus, TargetStatus
from gate.errors import ConfigError, GateError, StaleFormat
from gate.formats.baseline import Baseline, store
from gate.formats.baseline.names import SUFFIX
from gate.formats.baseline.store import Location
from gate.verdict.judge import Policy
from gate.verdict.next_step import move_command
from gate.verdict.types import ModelVerdict


def update_command(spec: ModelSpec, config: Config) -> str:
    return f"parity-gate update-baseline --model {spec.name}" + config_flag(config.path, Path.cwd())


@functools.lru_cache(maxsize=8)
def config_flag(path: Path, cwd: Path) -> str:
    """`` --config PATH`` unless a command run in ``cwd`` would find that config by itself: a printed
    command must run as printed where the check ran (a config in a subfolder keeps its default name)."""
    try:
        found = find_config(None, cwd)
    except ConfigError:
        found = None
    return "" if found is not None and found.resolve() == path.resolve() else f" --config {display(path)}"


def display(path: Path) -> Path:
    """``path`` relative to the working directory where it is inside it (reports, messages)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def policy(config: Config) -> Policy:
    return Policy(config.placement, config.max_slowdown, config.require,
                  tuple((p.name, p.precision) for p in config.providers))


def location(config: Config, spec: ModelSpec) -> Location:
    """Where the model's baseline lives: its own file, or its sweep's set file."""
    return Location.of(config.baseline_dir, spec.name, spec.sweep.sweep if spec.sweep else None)


def read_located(loc: Location, sets: dict[Path, dict[str, Baseline]]) -> Baseline:
    """``store.read``, where a sweep's set file is read once (into ``sets``) for all its cases."""
    if loc.case is None:
        return store.read(loc)
    if loc.path not in sets:
        sets[loc.path] = store.read_cases(loc.path)
    if loc.case not in sets[loc.path]:
        raise FileNotFoundError(loc)
    return sets[loc.path][loc.case]


def orphaned_baselines(config: Config) -> list[Path]:
    """Baseline files in the baseline folder that no configured model (or sweep) owns: a model removed
    or renamed in the config, whose baselines nothing checks any more."""
    owned = {location(config, spec).path for spec in config.models}
    folder = config.baseline_dir
    return sorted(p for p in folder.glob(f"*{SUFFIX}") if p not in owned) if folder.is_dir() else []


def load_baseline(config: Config, spec: ModelSpec) -> tuple[Path, Baseline | None]:
    """The model's baseline path and its ``Baseline`` (None when missing). Fingerprints taken with
    other parameters are refused, naming them."""
    loc = location(config, spec)
    path = loc.path
    try:
        baseline = store.read(loc)
    except FileNotFoundError:
        return path, None
    recorded, current = baseline.meta.fingerprint or {}, fingerprint.parameters()
    if recorded != current:
        diff = next(k for k in current if recorded.get(k) != current[k])
        raise StaleFormat(f"baseline `{path}`: fingerprints were taken with another {diff.replace('_', ' ')} "
                        f"({recorded.get(diff)} vs {current[diff]} here); re-create it with "
                        f"`{update_command(spec, config)}`")
    return path, baseline


def result_paths(files: list[Path]) -> list[Path]:
    """Result files named, or found in the folders named (``<model>/run.msgpack.zst``, ``*.msgpack.zst``)."""
    paths: list[Path] = []
    for f in files:
        if f.is_dir():
            found = sorted(f.glob("*/run.msgpack.zst")) + sorted(f.glob("*.msgpack.zst"))
            if not found:
                raise GateError(f"`{f}` holds no result files")
            paths.extend(found)
        else:
            paths.append(f)
    return paths


def changed_baselines(config: Config, since: str,
                      paths: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The baseline files changed since ``since`` (``paths`` where listed already) and their diffs as text
    (``baseline_changes``, ``gate.commands.baseline_diff``)."""
    from gate.commands.baseline_diff import baseline_diffs

    paths = baseline_changes(config, since) if paths is None else paths
    gone = dropped_baselines(config, paths)  # nothing to review line by line: the config dropped the model
    kept = [p for p in paths if p not in gone]
    return paths, baseline_diffs(config, since, kept, orphaned_baselines(config))


def dropped_baselines(config: Config, paths: list[str]) -> list[str]:
    """Those of the changed baseline files ``paths`` (as ``baseline_changes`` lists them) that the change
    deletes and no configured model owns: a model the config no longer checks, its file deleted with it. A
    configured model's deleted file is not one: it is restored (``restorable``)."""
    from gate.commands.baseline_diff import repo_top

    top = repo_top(config.root)
    owned = {location(config, spec).path.resolve() for spec in config.models}
    return [p for p in paths if not (top / p).exists() and (top / p).resolve() not in owned]


def loosened_baselines(config: Config, since: str, paths: list[str]) -> list[str] | None:
    """The changed baseline files ``paths`` whose rewrite lets a check pass by more
    (``gate.commands.baseline_diff.loosened_files``); None where none."""
    from gate.commands.baseline_diff import loosened_files

    return loosened_files(config, since, paths, orphaned_baselines(config)) or None


def restorable(config: Config, since: str, paths: list[str], models: list[ModelVerdict]) -> None:
    """Set ``restore`` on each model whose baseline file this change deleted or damaged (``paths``, as
    ``baseline_changes`` lists them) and ``since`` holds, ``moved_from`` on each whose file stayed behind
    when ``baseline-dir`` moved: the change is judged against that file once it is back, never by a new
    recording."""
    from gate.commands.baseline_diff import exists_at, moved_dir_file, repo_top

    top = repo_top(config.root)
    changed = {(top / p).resolve(): p for p in paths}
    specs = {spec.name: spec for spec in config.models}
    for m in models:
        spec = specs.get(m.name)
        lost = m.refused or (m.status == ModelStatus.NO_BASELINE and not m.baseline_exists)
        own = location(config, spec).path.resolve() if spec is not None and lost else None
        path, said = changed.get(own) if own is not None else None, ""
        if path is not None and exists_at(top, since, path):
            m.restore = since
            said = f"this change deleted {path}: restore it (`git checkout {since} -- {path}`)"
        elif own is not None and m.status == ModelStatus.NO_BASELINE and own.is_relative_to(top):
            # ``baseline-dir`` moved and the file did not: recording anew would take the change unjudged
            was = moved_dir_file(top, since, own.relative_to(top).as_posix(), m.name)
            m.moved_from = str(display(top / was)) if was else None
            said = f"`baseline-dir` moved and {m.moved_from} did not: move it (`{move_command(m)}`)"
        if (m.restore or m.moved_from) and m.status == ModelStatus.NO_BASELINE:
            m.message = said  # its rows said to create it: that records the change
            for p in m.providers:
                if p.status == TargetStatus.NO_BASELINE:
                    p.reason = m.message


def rewritten(config: Config, paths: list[str]) -> frozenset[Path]:
    """The changed baseline files ``paths`` (relative to the repository's top) as resolved paths: the
    baselines whose stage keys ``check`` does not take (they were written with the numbers they vouch for)."""
    from gate.commands.baseline_diff import repo_top

    top = repo_top(config.root) if paths else config.root
    return frozenset((top / p).resolve() for p in paths)


def baseline_changes(config: Config, since: str) -> list[str]:
    """Baseline files this change adds, changes, renames or deletes since ``since`` (the PR's base), for
    the report's "this PR changes baselines" block: every ``*.msgpack.zst`` of the repository, not only
    those under ``baseline-dir``, which the change itself could move. Fails closed: a GateError (exit 2)
    when git cannot tell, since an empty list would let a baseline change pass unseen."""
    one_commit(config, since)
    # -z: paths as they are (git quotes one with non-ASCII characters otherwise, and it would be missed)
    command = ["git", "diff", "-z", "--name-only", "--no-renames", since, "--", ":(top,glob)**/*.msgpack.zst"]
    try:
        proc = subprocess.run(command, cwd=config.root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise GateError(f"--changed-since {since}: git could not list the baseline files changed ({e}); run in a "
                        "git checkout") from None
    if proc.returncode != 0:
        why = " ".join(proc.stderr.split())[:200] or f"exit {proc.returncode}"
        raise GateError(f"--changed-since {since}: git could not list the baseline files changed ({why}); fetch that "
                        "commit (actions/checkout with fetch-depth: 0) or give the base commit that exists here")
    return sorted(p for p in proc.stdout.split("\0") if p.endswith(".msgpack.zst"))


def one_commit(config: Config, since: str) -> None:
    """GateError (exit 2) unless ``since`` names one commit here: git would read ``-v`` or ``--output=F`` as
    an option, and a range (``main...HEAD``) as the diff of another change."""
    command = ["git", "rev-parse", "--verify", "--quiet", f"{since}^{{commit}}"]
    try:
        proc = subprocess.run(command, cwd=config.root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise GateError(f"--changed-since {since}: git could not read it ({e}); run in a git checkout") \
            from None
    if since.startswith("-") or proc.returncode != 0:
        raise GateError(f"--changed-since {since}: not one commit here (a branch, tag or commit, never a "
                        "range or an option); fetch it (actions/checkout with fetch-depth: 0) or give the "
                        "base commit that exists here")
