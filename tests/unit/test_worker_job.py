"""gate.runners.job: the worker's job survives its file unchanged, and a broken job file is one
FormatError line naming the file and the key, in the reader and in a real worker process."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import msgpack
import pytest

from gate.config import ProviderSpec
from gate.errors import FormatError
from gate.runners.job import WorkerJob

ROOT = Path(__file__).resolve().parents[2]

FULL = WorkerJob(Path("/tmp/bundle"), "tiny-cnn",
                 ProviderSpec("TensorrtExecutionProvider", {"device_id": 1, "trt_fp16_enable": True}, "float16",
                              True, {"graph_optimization_level": "ORT_ENABLE_BASIC"}),
                 config=Path("/repo/parity-gate.toml"), threads=2, memory_mb=3072, capture_bytes=512 * 2**20,
                 output_tolerance=(1e-3, 0.0), repeats=5, latency=True, result=Path("/tmp/w/result.msgpack.zst"))


@pytest.mark.parametrize("job", [FULL, WorkerJob(Path("b"), "m", ProviderSpec("torch-cpu"))])
def test_a_job_round_trips(job):
    assert WorkerJob.from_bytes(job.to_bytes(), "job.msgpack") == job


def test_what_names_the_model():
    assert FULL.what == "model `tiny-cnn`"


def fields(**changes) -> bytes:
    doc = msgpack.unpackb(FULL.to_bytes(), raw=False)
    for key, value in changes.items():
        *path, last = key.split("__")
        node = doc
        for part in path:
            node = node[part]
        if value is ...:
            del node[last]
        else:
            node[last] = value
    return msgpack.packb(doc, use_bin_type=True)


@pytest.mark.parametrize("data, message", [
    (FULL.to_bytes()[:-7], "worker job `j`: not a msgpack document (Unpack failed: incomplete input)"),
    (b"\xc1garbage", "worker job `j`: not a msgpack document ("),
    (FULL.to_bytes() + b"\x00", "worker job `j`: not a msgpack document ("),  # trailing data
    (msgpack.packb([1, 2]), "worker job `j`: `(top level)`: expected an object, got an array"),
    (fields(threads="2"), "worker job `j`: `threads`: expected a number or null, got a string"),
    (fields(memory_mb=1.5), "worker job `j`: `memory_mb`: expected an integer, got 1.5"),
    (fields(capture_bytes=True), "worker job `j`: `capture_bytes`: expected a number or null, got a boolean"),
    (fields(bundle=...), "worker job `j`: `bundle`: expected a string, got nothing (missing)"),
    (fields(model=7), "worker job `j`: `model`: expected a string, got a number"),
    (fields(config=["x"]), "worker job `j`: `config`: expected a string, got an array"),
    (fields(latency="yes"), "worker job `j`: `latency`: expected true or false, got a string"),
    (fields(output_tolerance=[1e-3]), "worker job `j`: `output_tolerance`: expected two numbers or null, got an array"),
    (fields(provider=None), "worker job `j`: `provider`: expected an object, got null"),
    (fields(provider__name=b"cpu"), "worker job `j`: `provider.name`: expected a string, got bytes"),
    (fields(provider__precision="float8"), "worker job `j`: `provider.precision`: 'float8' is not one of"),
    (fields(provider__options=[1]), "worker job `j`: `provider.options`: expected an object or null, got an array"),
    (fields(provider__isolated=1), "worker job `j`: `provider.isolated`: expected true or false, got a number"),
])
def test_a_broken_job_is_one_line_naming_the_key(data, message):
    with pytest.raises(FormatError) as err:
        WorkerJob.from_bytes(data, "j")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_worker_given_a_broken_job_says_why_in_one_line(tmp_path):
    """What the parent reports as the crash's cause is the worker's last stderr line."""
    job = tmp_path / "job.msgpack"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for data, line in ((fields(provider__name=3), f"worker job `{job}`: `provider.name`: expected a string, got a number"),
                       (replace(FULL, result=None).to_bytes(), f"worker job `{job}`: `result`: expected a string, got null")):
        job.write_bytes(data)
        proc = subprocess.run([sys.executable, "-m", "gate.runners.worker", str(job)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert (proc.returncode, proc.stderr) == (2, line + "\n")
