"""The verdict: its types (``types``, ``notes``), built from a run and its baseline by ``against_reference``,
``checks``, ``structure``, ``moves``, ``causality``, ``data_dependent``, ``graph_precision``, ``placement``,
``model_audits``, ``versions``, ``comparisons``, ``sweeps``, ``gpu_leg``, ``next_step``, ``rollup`` and
``judge``; root-cause ``hints`` that never change it; a sharded run's legs made one (``shard``, ``merge``);
the JSON report file (``report_file``). No other I/O: ``gate.commands.judging`` reads the baselines.
"""
