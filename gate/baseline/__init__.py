"""Baseline files: the hardened reader, the deterministic writer, names and paths.

    doc = read_baseline(baseline_path(Path("baselines"), "resnet18"))
    write_baseline(path, doc)            # atomic, under baseline_lock(path)

Every problem with a file's content is one ``FormatError`` line naming the file and the
rule; a missing file is ``FileNotFoundError``; a bad model name is ``ConfigError``.
"""

from __future__ import annotations

from .atomic import atomic_write_bytes, atomic_write_text, baseline_lock
from .codec import decode_baseline, encode_baseline, read_baseline, write_baseline
from .limits import Limits
from .names import baseline_path, check_model_name
from .schema import FORMAT, VERSION

__all__ = [
    "FORMAT",
    "VERSION",
    "Limits",
    "atomic_write_bytes",
    "atomic_write_text",
    "baseline_lock",
    "baseline_path",
    "check_model_name",
    "decode_baseline",
    "encode_baseline",
    "read_baseline",
    "write_baseline",
]
