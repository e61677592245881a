"""The verdict, as types (``types``, and ``notes`` for comparisons and hints, with their JSON codec)
built from a run and its baseline: a runtime's values against the float64 reference, measured where
the runtime ran (``against_reference``), per-layer checks (``checks``), what changed in the model's
structure (``structure``: renames, copies, new and gone layers), layers whose shape depends on
values (``data_dependent``), target and model audits (``placement``, ``model_audits``), runtime
versions that moved (``versions``), a sweep's pairs and anchor (``comparisons``) and its support
matrix (``sweeps``), a GPU leg that checked no GPU (``gpu_leg``), the first regression and the
report (``judge``), root-cause hints that never change it (``hints``), and the reports of a sharded
run's legs made one (``shard``: what a leg covered; ``merge``), and the JSON report file
(``report_file``: written atomically, read back as distrustfully as a baseline). No other I/O: the one
judge that reads baselines and refuses what cannot be judged is ``gate.commands.judging``."""
