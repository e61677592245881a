"""Targets: where a runtime's numbers come from: a provider, the device class it ran on and the
precision it ran in. A baseline entry's key is the target's label (``x86_64-avx2``,
``cuda-sm90-NVIDIA_H100_80GB_HBM3:bfloat16``): ``label`` writes it and ``Target.parse`` reads it
back; nothing else assembles or splits labels.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.core.device import is_gpu_class

REFERENCE_PROVIDER = "torch-cpu"  # the float64 reference runs on PyTorch's CPU kernels
PRECISIONS = ("float32", "float16", "bfloat16", "int8")  # what a target computes in (int8: a quantized graph)
TORCH_PRECISIONS = ("float32", "float16", "bfloat16")  # what PyTorch providers can cast a model to
DEFAULT_PRECISION = "float32"
_FINEST_FIRST = ("float64", "float32", "float16", "bfloat16", "int8")
# Relative L2 by which two computations of one tensor in a precision differ by rounding alone (other
# kernels, thread counts, machines): how far a value may move and still be the same value.
ROUNDING = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 1e-2}


def coarsest(*precisions: str) -> str:
    """The least precise of float dtypes (a comparison is as precise as its coarser side)."""
    return max(precisions, key=_FINEST_FIRST.index)


@dataclass(frozen=True)
class Target:
    provider: str
    device_class: str
    precision: str = DEFAULT_PRECISION

    @property
    def label(self) -> str:
        if self.precision == DEFAULT_PRECISION:
            return self.device_class
        return f"{self.device_class}:{self.precision}"

    @classmethod
    def parse(cls, provider: str, label: str) -> Target:
        device_class, sep, precision = label.partition(":")
        return cls(provider, device_class, precision if sep else DEFAULT_PRECISION)

    @property
    def architecture(self) -> str:
        """``x86_64`` for ``x86_64-avx512``: classes of one architecture run the same kernels
        up to their vector width, so one may stand in for another (noted in the report)."""
        return self.device_class.split("-")[0]

    def can_stand_in_for(self, other: Target) -> bool:
        """Whether this target's baseline entry may judge ``other`` when ``other`` has none."""
        return (self.provider == other.provider and self.precision == other.precision
                and self.architecture == other.architecture
                and not is_gpu_class(other.device_class))  # a GPU class names one architecture

    def __str__(self) -> str:
        return f"{self.provider} ({self.label})"
