"""The files of a user's repository that parity-gate knows by name: the config finder, ``init`` and the
judging side (which has only a pull request's file list, no checkout) read these names from here."""

from __future__ import annotations

PYPROJECT = "pyproject.toml"  # holds the config in its [tool.parity-gate] table
STANDALONE = "parity-gate.toml"  # the config on its own (the same table, or its keys at top level)
CONFIG_TABLE = ("tool", "parity-gate")
CONSTRAINTS = "parity-gate-constraints.txt"  # the pins `init` writes and the action installs with
WORKFLOWS = ".github/workflows/"
