"""Plain JSON values: what every JSON writer of the project passes its data through."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def plain(obj: Any) -> Any:
    """``obj`` with non-finite floats as None (JSON has no NaN/Inf), NumPy scalars as Python
    numbers and tuples as lists. Dict keys are kept."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj
