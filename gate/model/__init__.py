"""The model under test: built once from its factory (``build``, needs torch), the inputs it
runs on (``inputs``, NumPy only, so a runner without torch rebuilds the same bytes), a forward
traced layer by layer (``trace``) through forward hooks on every module call (``torch_hooks``)
that fingerprint each output at once, on its own device (``torch_fingerprint``); its pristine
code (``pristine``), its data and their digests (``weights``), sweep cases (``sweep``) and the
reference's memory budget (``budget``); the dispatch modes' base, which loads no Dynamo (``dispatch``).
The runners and the exporter take hooks from here."""
