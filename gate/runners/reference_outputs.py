"""The float64 reference's outputs as a stage output: what a store entry holds of them (``outputs.npz``,
no pickles), their digest, and when two sets are the same output (within the reference's noise: two
machines' float64 runs differ in their last bits). NumPy only."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from gate.store import Entry

FILE = "outputs.npz"


class Unreadable(Exception):
    """An entry's outputs file does not read; the message says why."""


@dataclass(frozen=True)
class ReferenceOutputs:
    arrays: list[np.ndarray]
    tolerance: float  # relative L2 within which another set is the same output
    proves: ClassVar[frozenset[str]] = frozenset()  # every file hashed by the store

    def output_digest(self) -> str:
        h = hashlib.sha256(b"parity-gate float64 outputs v1\n")
        for a in self.arrays:
            h.update(f"{a.dtype}{list(a.shape)}\n".encode())
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()

    def payload(self) -> dict[str, Any]:
        return {}  # the arrays say all: no payload beside them

    def write(self, folder: Path) -> None:
        arrays: dict[str, Any] = {f"out{i}": a for i, a in enumerate(self.arrays)}
        np.savez(folder / FILE, **arrays)

    def differs_from(self, entry: Entry) -> str | None:
        """None when ``entry``'s outputs agree with these, else where they differ."""
        stored = read(entry)
        if len(stored) != len(self.arrays):
            return f"{len(self.arrays)} float64 outputs against {len(stored)} stored"
        for i, (a, b) in enumerate(zip(stored, self.arrays, strict=True)):
            if a.shape != b.shape or a.dtype != b.dtype:
                return f"output {i}: {b.dtype}{list(b.shape)} against {a.dtype}{list(a.shape)} stored"
            if not np.issubdtype(a.dtype, np.floating):
                if not np.array_equal(a, b):
                    return f"output {i} differs"
                continue
            finite = np.isfinite(a)
            if not np.array_equal(finite, np.isfinite(b)) or not np.array_equal(a[~finite], b[~finite], equal_nan=True):
                return f"output {i}: its NaN and infinite values differ from the stored output's"
            a, b = a[finite], b[finite]  # NaN - NaN is NaN: the same non-finite values agree, the rest by L2
            scale = float(np.linalg.norm(a.astype(np.float64)))
            err = float(np.linalg.norm((a - b).astype(np.float64))) / (scale or 1.0)
            if not err <= self.tolerance:
                return f"output {i}: relative L2 {err:.3g} against the stored float64 output (limit {self.tolerance:.3g})"
        return None


def read(entry: Entry) -> list[np.ndarray]:
    """The outputs an entry holds (``Unreadable`` when its file does not read)."""
    try:
        with np.load(entry.path(FILE), allow_pickle=False) as npz:
            return [npz[f"out{i}"] for i in range(len(npz.files))]
    except (OSError, ValueError, KeyError) as exc:
        raise Unreadable(f"{FILE}: {type(exc).__name__}: {exc}") from None
