"""The model under test: built once from its factory (``build``, needs torch) and the inputs it
runs on (``inputs``, NumPy only, so a runner without torch rebuilds the same bytes)."""
