"""PyTorch -> ONNX: the export itself (``exporter``, needs torch) with each module call's outputs
followed to the values that compute them (``signatures``, needs torch), post-export transforms
(``transform``) and prebuilt artifacts (``artifact``); the shipped graph as files and whether it
loads (``saved``), what the baseline records of it (``graph``: its digest, op types, precision,
dynamic dimensions) and the ONNX value <-> module-call map (``layermap``), all ONNX only."""
