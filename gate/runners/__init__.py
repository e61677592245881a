"""Runners: one per kind of provider (PyTorch eager ``torch_eager``, ``torch.compile``
``torch_compile``, an ONNX Runtime EP ``onnxruntime``), each behind the interface of ``base.Runner``
and picked by ``registry``; ``probed`` is ``torch-cpu`` judged from the probe's capture. A runner runs
and returns values; it compares them with the reference through ``gate.verdict.against_reference``.

The float64 reference lives here too: ``reference`` runs it, ``widen`` runs a float32 model in
float64 without a copy, ``promotion`` promotes the casts the model makes, ``data_dependence`` marks
tensors whose shape depends on values, ``gradients`` adds the backward pass as layers,
``reference_outputs`` holds its outputs as a stage output, and ``forked`` runs it in a forked child
beside the export (when: ``gate.pipeline.beside``).

``isolation`` runs any runner in a worker process (``worker``) with a timeout and budgets, handing it
a ``job.WorkerJob``; ``heap`` returns freed heap pages before a worker starts. Beside them: PyTorch's
numerics settings (``torch_numerics``; the hooks and tensor fingerprints are the model's, in
``gate.model``), ONNX Runtime's sessions, capture, segments and placement (``ort_*``) and the GPU an
EP runs on (``gpu_probe``)."""
