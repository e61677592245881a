"""The content-addressed store of stage outputs (docs/verdict.md#stages): ``entry`` (one folder per
stage and key, written once, verified on every read) and ``store`` (get, put, alarms, pruning). The
folder is ``gate.env.store_dir``. No torch, no ONNX: a stage hands its files in and checks its payload."""

from gate.env import store_dir
from gate.store.entry import MANIFEST, Corrupt, Entry
from gate.store.store import Lookup, Output, Put, PutState, Store

__all__ = ["MANIFEST", "Corrupt", "Entry", "Lookup", "Output", "Put", "PutState", "Store", "store_dir"]
