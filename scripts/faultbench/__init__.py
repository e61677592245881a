"""The fault benchmark's parts (``scripts/bench_faults.py`` runs them): public architectures with
random weights (``models``), faults in the PyTorch model (``faults``), faults only the exported
graph or the runtime sees (``graph_faults``), behaviour-preserving refactors (``refactors``), the
first module a fault changes, found independently of the gate (``truth``), the gate's runs
(``runs``) and strict scoring (``scoring``). ``factories`` holds what the gate's config names."""
