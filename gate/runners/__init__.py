"""Runners: one per kind of provider (``torch_eager``, ``torch_compile``, ``onnxruntime``; ``probed``
judges ``torch-cpu`` from the probe's capture) behind ``base.Runner``, picked by ``registry``.

The float64 reference: ``reference``, ``widen``, ``promotion``, ``data_dependence``, ``gradients``,
``reference_outputs``, ``forked`` (beside the export). ``isolation`` runs a runner in a ``worker``
process from a ``job.WorkerJob``; ``heap`` manages its memory. Also: ``torch_numerics``, ``ort_*``
(ONNX Runtime sessions, capture, segments, placement) and ``gpu_probe``."""
