"""The files parity-gate reads and writes (docs/formats.md): ``baseline`` and ``results``; the JSON report's
codec is the verdict's. Shared: ``frame`` (zstd frame, version check), ``stream`` and ``nodes`` (the
check-before-allocate msgpack reader and its schema), ``limits`` (size caps), ``atomic`` (writes, lock).
"""
