"""The commands as library calls; the CLI renders what they return and nothing here prints.

``check`` (run here, judge, report), ``update`` (rewrite baselines), ``matrix`` (``export_models`` on
the torch side, ``collect`` on the ONNX Runtime side, ``report_files`` merging every runner's results),
``listing`` (``list`` and ``validate``), ``cache_key`` (a CI cache's key), ``shards`` (one leg's
models), ``baseline_shards`` (a sharded re-recording merged), ``judging`` (the one judge), ``common``
(what they share), ``baseline_diff`` (the baseline files a change rewrites, as text), ``loosened``
(what a change's config stopped judging) and ``commit_tree`` (the base's files, read with git). One
model's run is ``gate.pipeline``.
"""

from gate.commands.check import check
from gate.commands.common import (
           baseline_changes,
           changed_baselines,
           dropped_baselines,
           loosened_baselines,
           one_commit,
           restorable,
           rewritten,
)
from gate.commands.loosened import base_config
from gate.commands.matrix import collect, export_models, report_files
from gate.commands.update import Updated, update_baseline

__all__ = ["Updated", "base_config", "baseline_changes", "changed_baselines", "check", "collect",
           "dropped_baselines", "export_models", "loosened_baselines", "one_commit", "report_files",
           "restorable", "rewritten", "update_baseline"]
