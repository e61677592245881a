"""Caps the baseline and result readers enforce before they allocate (see ``Limits``)."""

from __future__ import annotations

from dataclasses import dataclass

from gate.core.names import MAX_NAME

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Upper bounds for one baseline file; every one is checked before the memory is spent. The defaults
    fit a 100,000-layer model with 64 providers; writers never produce a file over them."""

    max_file_size: int = 64 * MiB  # the compressed file
    max_decompressed_size: int = 256 * MiB  # what the zstd frame may declare
    max_layers: int = 100_000  # of "layers" and of each provider's layer map
    max_name_length: int = MAX_NAME  # a layer, type, provider or device-class name
    max_providers: int = 64
    max_device_classes: int = 64  # per provider
    max_sketch_width: int = 65_536
    max_rank: int = 32
    max_quantiles: int = 1_024
    max_text_length: int = 4_096  # the other strings: versions, machine, fallback reason
    max_runs: int = 10_000  # model runs in one result file

    @property
    def max_sketch_bytes(self) -> int:
        return self.max_sketch_width * 8


DEFAULT_LIMITS = Limits()
