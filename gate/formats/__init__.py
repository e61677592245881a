"""The files parity-gate reads and writes (specified in docs/formats.md): baselines, result
files and bundles; the JSON report's codec is the verdict's (``gate.verdict.report_file``).
Shared here: the zstd frame and version check (``frame``), the check-before-allocate msgpack
reader (``stream``) and its schema nodes (``nodes``), size caps (``limits``), atomic writes and
the writer lock (``atomic``)."""
