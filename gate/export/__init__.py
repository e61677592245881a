"""PyTorch -> ONNX export (``exporter``, needs torch) and the ONNX value <-> module-call map
(``layermap``, ONNX only)."""
