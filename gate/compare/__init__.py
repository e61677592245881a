"""Judge a run against its baseline: per-layer checks, first regression, verdict."""
