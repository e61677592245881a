"""The commands as library calls; the CLI renders what they return and nothing here prints.

The commands: ``check`` (run here, judge, report), ``update_baseline`` (rewrite baselines), the
matrix flow (``matrix``: ``export_models`` on the torch side, ``collect`` on the ONNX Runtime side,
``report_files`` merging every runner's results into one verdict), ``listing`` (``list`` and
``validate``), ``cache_key`` (the key a CI cache of the store is saved under) and ``shards`` (the
models of one leg of a matrix, ``--shard K/N``). ``check`` and ``report_files`` judge through one
function, ``judging.judge``; ``common`` holds what they share (a model's baseline, the command that
re-creates it) and ``baseline_diff`` the baseline files a change rewrites, as text.

One model's run, which they call, is ``gate.pipeline``.
"""

from gate.commands.check import check
from gate.commands.common import baseline_changes, changed_baselines
from gate.commands.matrix import collect, export_models, report_files
from gate.commands.update import Updated, update_baseline

__all__ = ["Updated", "baseline_changes", "changed_baselines", "check", "collect", "export_models", "report_files", "update_baseline"]
