"""The content-addressed store of stage outputs (docs/verdict.md#stages): one folder per stage and
key, written once, verified on every read.

``<dir>/<stage>/<key>/`` holds the output's files and ``manifest.json`` (the stage, the key, the
output's digest, each file's size and sha256, and the payload its stage wrote). ``<dir>/alarms/``
holds the keys that once gave a second, different output: those are never read or written again.
The folder is ``PARITY_GATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/parity-gate``, else
``~/.cache/parity-gate``; ``off`` turns it off (``gate.env.store_dir``). No torch, no ONNX: a stage hands its files in and
checks its own payload.
"""

from gate.env import store_dir
from gate.store.entry import MANIFEST, Corrupt, Entry
from gate.store.store import Lookup, Output, Put, PutState, Store

__all__ = ["MANIFEST", "Corrupt", "Entry", "Lookup", "Output", "Put", "PutState", "Store", "store_dir"]
