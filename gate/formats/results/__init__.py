"""Result files (``export``/``collect`` write them, ``report`` merges them) and bundles: the
folder ``export`` writes per model, which any runner can run and fingerprint without torch."""

from gate.formats.results.bundle import RUN, Bundle
from gate.formats.results.codec import merge, read_run, read_runs, run_to_dict, write_runs

__all__ = ["RUN", "Bundle", "merge", "read_run", "read_runs", "run_to_dict", "write_runs"]
