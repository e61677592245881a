"""The commands as library calls; the CLI renders what they return and nothing here prints.

``check`` (run here, judge, report), ``update_baseline`` (rewrite baselines), and the matrix
flow: ``export_models`` (torch side), ``collect`` (ONNX Runtime side, no torch),
``report_files`` (merge every runner's results into one verdict). ``check`` and ``report_files``
judge through one function, ``judging.judge``. ``pipeline`` runs one model (``prepare`` builds,
exports and fingerprints its reference) in stages (``stages``), each reused only under a key of
exactly what it reads (``content_key``), the float64 reference beside the export where it may
(``beside``); ``providers`` runs one provider, in-process or in a worker; ``listing`` backs ``list`` and ``validate``; ``shards`` picks the models of one leg of a
matrix (``--shard K/N``).
"""

from gate.commands.check import check
from gate.commands.common import baseline_changes, changed_baselines
from gate.commands.matrix import collect, export_models, report_files
from gate.commands.update import Updated, update_baseline

__all__ = ["Updated", "baseline_changes", "changed_baselines", "check", "collect", "export_models", "report_files", "update_baseline"]
