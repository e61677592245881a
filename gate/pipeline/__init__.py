"""One model's run, which every command calls (docs/verdict.md#stages): ``run`` runs it (``run_model``),
``prepare`` builds, exports and fingerprints its float64 reference (``beside`` decides when that runs
in a forked child beside the export), and ``providers`` runs one provider, in-process or in a worker.

Its stages are reused only under a key of exactly what each reads: ``content_key`` makes the keys,
``stages`` decides what a run may take from the baseline and the store and stores what it computed,
``reuse_explain`` says what moved inside a changed key, and ``alarms`` puts soundness alarms onto a
run. Returns a ``ModelRun``; judging it is the verdict's job.
"""
