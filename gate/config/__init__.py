"""The configuration: ``load_config(find_config(path))`` gives a validated ``Config``."""

from gate.config.load import find_config, load_config
from gate.config.providers import canonical_provider
from gate.config.types import (
    DTYPES,
    EXPORTERS,
    PRECISION_TOLERANCE,
    Config,
    DetectionTolerance,
    InputSpec,
    Isolation,
    LayerTolerance,
    ModelSpec,
    Pair,
    ProviderSpec,
    Skip,
    Sweep,
    SweepCase,
    Tolerance,
)

__all__ = [
    "DTYPES",
    "EXPORTERS",
    "PRECISION_TOLERANCE",
    "Config",
    "InputSpec",
    "Isolation",
    "DetectionTolerance",
    "LayerTolerance",
    "ModelSpec",
    "Pair",
    "ProviderSpec",
    "Skip",
    "Sweep",
    "SweepCase",
    "Tolerance",
    "canonical_provider",
    "find_config",
    "load_config",
]
