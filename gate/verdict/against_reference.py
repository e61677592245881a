"""A runtime's values against the float64 reference: each layer's error and the outputs' exact metrics
and detections. It runs where the runtime ran, because a result file carries a runtime layer's
fingerprint without its sketch or full tensors; the measures travel as ``ProviderLayer`` fields.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gate.core import detections
from gate.core.exact import exact
from gate.core.layers import is_output
from gate.core.runs import LayerInfo, ProviderLayer, ProviderRun
from gate.core.status import LayerStatus
from gate.fingerprint import Fingerprint, relative_error
from gate.verdict.drift import filled, order_move


def error_against(fp: Fingerprint, ref: Fingerprint | None) -> float | None:
    """A runtime's relative L2 error against the reference layer (None: no comparable layer); where fills
    dominate the reference (``drift.filled``), the larger of it and the move of an order statistic, which
    the values beside the fills decide (``drift.order_move``)."""
    if ref is None or tuple(fp.shape) != tuple(ref.shape):
        return None
    error = relative_error(fp, ref)
    return max(error, order_move(fp, ref)[0]) if filled(ref) else error


def layers(prun: ProviderRun, fingerprints: Mapping[str, Fingerprint], reference: list[LayerInfo],
           missing: str) -> ProviderRun:
    """Fill ``prun`` from captured fingerprints by layer name, errors against the reference;
    reference layers not captured are ``absent`` with the reason ``missing``."""
    fps = {x.name: x.fp for x in reference}
    for name, fp in fingerprints.items():
        prun.layers[name] = ProviderLayer(LayerStatus.OK, fp, error_against(fp, fps.get(name)))
    for name in fps:
        prun.layers.setdefault(name, ProviderLayer(LayerStatus.ABSENT, reason=missing))
    return prun


def outputs(prun: ProviderRun, arrays: list[np.ndarray], reference: list[LayerInfo], expected: list[np.ndarray],
            tolerance: tuple[float, float] | None) -> None:
    """Exact metrics of the model's outputs (``arrays``, in output order) against the reference's
    (``expected``), where both tensors are here; detections matched where they are data-dependent."""
    names = [x.name for x in reference if is_output(x.name)]
    for name, actual, want in zip(names, arrays, expected, strict=False):
        layer = prun.layers.get(name)
        if layer is not None and layer.status == LayerStatus.OK:
            layer.exact = exact(actual, want, tolerance)
    dependent = {x.name for x in reference if x.data_dependent is not None}
    for found in detections.find(zip(names, arrays, expected, strict=False), dependent):
        for name in found.members:  # each observed member of a matched group gets its group's facts
            layer = prun.layers.get(name)
            if layer is not None and layer.status == LayerStatus.OK:
                layer.detections = found
