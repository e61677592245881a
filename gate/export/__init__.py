"""PyTorch -> ONNX: the export itself (``exporter``, needs torch), the ONNX value <-> module-call
map (``layermap``) and the graph's digest (``digest``), both ONNX only."""
