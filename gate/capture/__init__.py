"""Run a model and fingerprint every activation as it is produced: PyTorch (``torch_capture``)
and ONNX Runtime (``ort_capture``). Only fingerprints leave this package; tensors are dropped
as soon as they are fingerprinted, so memory does not grow with the number of layers."""
