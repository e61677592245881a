"""A bundle: the folder that holds one exported model for the runners (docs/formats.md): ``model.onnx``,
``inputs.npz``, ``outputs.npz`` and ``run.msgpack.zst``, the model's run so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gate.core.runs import ModelRun
from gate.errors import FormatError

from .codec import read_run, write_runs

MODEL, INPUTS, OUTPUTS, RUN = "model.onnx", "inputs.npz", "outputs.npz", "run.msgpack.zst"


@dataclass(frozen=True)
class Bundle:
    folder: Path

    @property
    def model(self) -> Path:
        return self.folder / MODEL

    @property
    def has_model(self) -> bool:
        return self.model.is_file()

    def write(self, run: ModelRun, model: bytes | Path | None = None, inputs: list[np.ndarray] | None = None,
              outputs: list[np.ndarray] | None = None) -> None:
        """``model``: the graph's bytes, or a saved graph file (its external data comes along,
        hard-linked where the file system allows)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if isinstance(model, Path):
            from gate.export.saved import copy_model

            copy_model(model, self.folder)
        elif model is not None:
            self.model.write_bytes(model)
        if inputs is not None:
            np.savez(self.folder / INPUTS, **{f"arg{i}": a for i, a in enumerate(inputs)})
        if outputs:
            np.savez(self.folder / OUTPUTS, **{f"out{i}": a for i, a in enumerate(outputs)})
        self.write_run(run)

    def write_run(self, run: ModelRun) -> None:
        write_runs(self.folder / RUN, [run])

    def read_run(self) -> ModelRun:
        return read_run(self.folder / RUN)

    def inputs(self) -> list[np.ndarray]:
        return self._arrays(INPUTS, "arg")

    def outputs(self) -> list[np.ndarray]:
        """The reference's outputs (float64): what the exact output metrics compare with; none
        in a bundle written without them."""
        return self._arrays(OUTPUTS, "out") if (self.folder / OUTPUTS).is_file() else []

    def _arrays(self, name: str, prefix: str) -> list[np.ndarray]:
        try:
            with np.load(self.folder / name, allow_pickle=False) as npz:
                return [npz[f"{prefix}{i}"] for i in range(len(npz.files))]
        except (OSError, ValueError, KeyError) as exc:
            raise FormatError(f"bundle `{self.folder}`: cannot read {name} ({type(exc).__name__}: {exc})") from None
