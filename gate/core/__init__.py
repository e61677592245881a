"""The facts every step shares, as types and one rule each, with no torch and no onnxruntime:
the words of runs and verdicts (``status``), a model that failed (``failure``, with the user's
own frame that failed from ``frames``), targets and precisions (``target``), what a run produces
(``runs``, with a detector's matched outputs in ``detections``), layer and model names
(``layers``, ``names``), ``module:attribute`` references (``refs``), device classes
(``device``), versions (``versions``), exact output metrics (``exact``), plain-JSON cleaning
(``jsonsafe``), checked reading of untrusted JSON objects (``fields``), a run's reuse record
(``reuse``), progress lines timed by stage (``progress``), work on a background thread
(``background``), the garbage collector's rule around a command (``collector``), the names of a user's
repository files (``files``) and what re-expressing weights did to their values (``reexpressed``)."""
