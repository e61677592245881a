"""One model's run, which every command calls (docs/verdict.md#stages): ``run`` runs it, ``prepare``
builds, fingerprints the reference (before the export, or ``beside`` it in a forked child) and exports, and
``providers`` runs one provider. Stages are reused only under a key of what each reads: ``content_key``
makes the keys, ``stages`` decides what a run takes from the baseline and the store and stores what it
computed, ``reuse_explain`` says what moved in a changed key, ``alarms`` puts soundness alarms on a run."""
