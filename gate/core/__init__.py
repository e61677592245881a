"""The facts every step shares, as types: targets (``target``), runs (``runs``), layer and
model names (``layers``, ``names``), device classes (``device``), versions, settings read from
the environment (``env``), and plain-JSON cleaning (``jsonsafe``). No torch, no onnxruntime."""
