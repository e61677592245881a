"""Caps the baseline and result readers enforce before they allocate (see ``Limits``)."""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Upper bounds for one baseline file; every one is checked before the memory is spent.

    The defaults fit a 100,000-layer model with 64 providers; writers never produce a file
    over them (``encode_baseline`` checks against ``Limits()``). Tests pass small values
    to hit the boundaries.

    max_file_size          bytes of the compressed file (64 MiB), checked before reading
    max_decompressed_size  bytes the zstd frame may declare (256 MiB), checked before decompressing
    max_layers             entries of "layers" and of each provider's layer map (100,000)
    max_name_length        characters of a layer, type, provider or device-class name (1,024)
    max_providers          entries of "providers" (64)
    max_device_classes     device classes per provider (64)
    max_sketch_width       meta.fingerprint.sketch_width (65,536; a sketch is width * 8 bytes)
    max_rank               entries of a fingerprint's "shape" (32)
    max_quantiles          entries of meta.fingerprint.quantiles and of each "q" (1,024)
    max_text_length        characters of the other strings: versions, machine, fallback reason (4,096)
    max_runs               model runs in one result file (10,000)
    """

    max_file_size: int = 64 * MiB
    max_decompressed_size: int = 256 * MiB
    max_layers: int = 100_000
    max_name_length: int = 1_024
    max_providers: int = 64
    max_device_classes: int = 64
    max_sketch_width: int = 65_536
    max_rank: int = 32
    max_quantiles: int = 1_024
    max_text_length: int = 4_096
    max_runs: int = 10_000

    @property
    def max_sketch_bytes(self) -> int:
        return self.max_sketch_width * 8


DEFAULT_LIMITS = Limits()
