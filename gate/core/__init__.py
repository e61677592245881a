"""The facts every step shares, as types and one rule each, with no torch and no onnxruntime:
the words of runs and verdicts (``status``), targets and precisions (``target``), what a run
produces (``runs``), layer and model names (``layers``, ``names``), ``module:attribute``
references (``refs``), device classes (``device``), versions (``versions``), settings read
from the environment (``env``), exact output metrics (``exact``), plain-JSON cleaning
(``jsonsafe``), checked reading of untrusted JSON objects (``fields``), a run's
reuse record (``reuse``), progress stages (``stages``), work on a background thread (``background``) and
the benchmarks' profile switch (``profile``). What probes or manages the machine lives with its
users: the GPU probe and heap trimming in ``gate.runners``, ONNX Runtime distributions in
``gate.github``, installed extras in ``gate.cli``."""
