"""Baseline files: the hardened reader, the deterministic writer, the typed ``Baseline``.

    baseline = read_baseline(baseline_path(Path("baselines"), "resnet18"))   # -> Baseline
    merged = merge_run(run, baseline)    # the run's reference and entries over the rest
    write_baseline(path, merged)         # atomic, under baseline_lock(path)

Every problem with a file's content is one ``FormatError`` line naming the file and the
rule; a missing file is ``FileNotFoundError``; a bad model name is ``ConfigError``.
"""

from __future__ import annotations

from ..atomic import atomic_write_bytes, atomic_write_text, baseline_lock
from ..limits import Limits
from .changes import describe
from .codec import decode_baseline, encode_baseline, read_baseline, read_document, write_baseline
from .document import Baseline, BaselineLayer, Entry, EntryLayer
from .names import baseline_path
from .schema import FORMAT, VERSION
from .update import merge_run

__all__ = ["FORMAT", "VERSION", "Baseline", "BaselineLayer", "Entry", "EntryLayer", "Limits",
           "atomic_write_bytes", "atomic_write_text", "baseline_lock", "baseline_path", "decode_baseline",
           "describe", "encode_baseline", "merge_run", "read_baseline", "read_document", "write_baseline"]
