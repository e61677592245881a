"""Result files (``export``/``collect`` write them, ``report`` merges them) and bundles: the
folder ``export`` writes per model, which any runner can run and fingerprint without torch."""

from gate.formats.results.bundle import INPUTS, MODEL, RUN, Bundle
from gate.formats.results.codec import (
           KIND,
           merge,
           read_run,
           read_runs,
           run_from_dict,
           run_to_dict,
           write_runs,
)

__all__ = ["INPUTS", "KIND", "MODEL", "RUN", "Bundle", "merge", "read_run", "read_runs", "run_from_dict",
           "run_to_dict", "write_runs"]
