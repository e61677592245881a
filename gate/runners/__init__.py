"""Runners: one per kind of provider (PyTorch eager, ``torch.compile``, an ONNX Runtime EP),
each behind the interface of ``base.Runner`` and picked by ``registry``; ``reference`` runs the
float64 reference; ``isolation`` runs any runner in a worker process (``worker``) with a timeout
and budgets, handing it a ``job.WorkerJob`` (``ahead``: a worker's run started before its float64
reference exists, judged once the parent writes it). Beside them: PyTorch's numerics settings
(``torch_numerics``; the hooks and tensor fingerprints are the model's, in ``gate.model``), ONNX
Runtime's sessions, capture and placement (``ort_*``), the GPU an EP runs on (``gpu_probe``) and
returning freed heap pages before a worker starts (``heap``)."""
