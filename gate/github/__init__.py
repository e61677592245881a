"""GitHub side of parity-gate: the REST client (``client``), the pull request as the API tells it
(``event``, ``pull``, ``changes``), the one PR comment (``comment``, ``stamp``), approvals (``approval``),
a report's verdict decided again (``recheck``), commit status, job summary and step outputs (``publish``,
``commit_status``, ``actions``), a sharded run's legs (``legs``), and what the composite action installs
(``install``, ``ortdist``, ``pins``). No typer/rich here; the CLI lives in gate.cli.github_cmds.
"""
