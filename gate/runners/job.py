"""What a worker process runs: one provider on one exported model, with the run's budgets and settings,
as a typed value with its codec beside it, so parent and worker cannot drift apart. The file is
msgpack (never pickle: reading it runs no code); every field is checked on the way in, each problem
one ``FormatError`` line naming the job file and the key."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

from gate.config import ProviderSpec
from gate.core.fields import Obj, kind
from gate.core.target import PRECISIONS
from gate.errors import FormatError


@dataclass(frozen=True)
class WorkerJob:
    bundle: Path  # the exported bundle: the run so far, ``model.onnx``, the inputs and outputs
    model: str  # the model's name (a PyTorch provider rebuilds it from the config by this name)
    provider: ProviderSpec
    config: Path | None = None  # where a PyTorch provider finds the model's factory
    threads: int | None = None  # intra-op threads (None: the runtime's own)
    memory_mb: int | None = None  # the worker's address-space budget (None: unlimited)
    capture_bytes: int | None = None  # marked intermediates held at once (None: all in one run)
    output_tolerance: tuple[float, float] | None = None  # (rtol, atol) of the exact output metrics
    repeats: int | None = None  # timed runs
    latency: bool = False  # time the default runs even without ``repeats``
    result: Path | None = None  # where the worker writes its ProviderRun (``run_isolated`` sets it)

    @property
    def what(self) -> str:
        return f"model `{self.model}`"

    def to_bytes(self) -> bytes:
        p = self.provider
        return msgpack.packb({
            "bundle": str(self.bundle), "model": self.model,
            "provider": {"name": p.name, "precision": p.precision, "options": dict(p.options),
                         "session_options": dict(p.session_options), "isolated": p.isolated},
            "config": _opt_str(self.config), "threads": self.threads, "memory_mb": self.memory_mb,
            "capture_bytes": self.capture_bytes,
            "output_tolerance": list(self.output_tolerance) if self.output_tolerance is not None else None,
            "repeats": self.repeats, "latency": self.latency, "result": _opt_str(self.result),
        }, use_bin_type=True)

    @classmethod
    def from_bytes(cls, data: bytes, source: str) -> WorkerJob:
        """The job in ``data`` (read from the file ``source``); FormatError names what is wrong."""
        where = f"worker job `{source}`"
        try:
            doc = msgpack.unpackb(data, raw=False)
        except (ValueError, TypeError, msgpack.UnpackException) as exc:  # truncated, garbled, not UTF-8
            raise FormatError(f"{where}: not a msgpack document ({str(exc) or type(exc).__name__})") from None
        job = Obj(doc, where)
        return cls(Path(job.str("bundle")), job.str("model"), _provider(Obj(doc.get("provider"), where, "provider")),
                   config=_opt_path(job, "config"), threads=job.int("threads"), memory_mb=job.int("memory_mb"),
                   capture_bytes=job.int("capture_bytes"), output_tolerance=_pair(job, "output_tolerance"),
                   repeats=job.int("repeats"), latency=job.bool("latency"), result=_opt_path(job, "result"))


def _provider(p: Obj) -> ProviderSpec:
    isolated = p.bool("isolated") if p.has("isolated") else None
    return ProviderSpec(p.str("name"), _mapping(p, "options"), p.choice("precision", PRECISIONS), isolated,
                        _mapping(p, "session_options"))


def _mapping(obj: Obj, key: str) -> dict[str, Any]:
    value = obj.free(key) or {}
    for k in value:
        if not isinstance(k, str):
            obj.fail(key, f"expected string keys, got {kind(k)}")
    return value


def _pair(obj: Obj, key: str) -> tuple[float, float] | None:
    value = obj.data.get(key)
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != 2
            or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in value)):
        obj.fail(key, f"expected two numbers or null, got {kind(value)}")
    return float(value[0]), float(value[1])


def _opt_path(obj: Obj, key: str) -> Path | None:
    value = obj.opt_str(key)
    return None if value is None else Path(value)


def _opt_str(path: Path | None) -> str | None:
    return None if path is None else str(path)

