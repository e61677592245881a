"""Runners: one per kind of provider (PyTorch eager, ``torch.compile``, an ONNX Runtime EP),
each behind the interface of ``base.Runner``; ``reference`` runs the float64 reference;
``isolation`` runs any runner in a worker process (``worker``) with a timeout and budgets, handing
it a ``job.WorkerJob``."""
