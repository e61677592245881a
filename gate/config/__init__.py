"""The configuration: ``load_config(find_config(path))`` gives a validated ``Config``."""

from gate.config.load import config_in, find_config, load_config
from gate.config.providers import canonical_provider
from gate.config.reader import Files
from gate.config.types import (
    DTYPES,
    Config,
    DetectionTolerance,
    InputSpec,
    Isolation,
    LayerTolerance,
    ModelSpec,
    ProviderSpec,
    Sweep,
    Tolerance,
)

__all__ = ["DTYPES", "Config", "DetectionTolerance", "Files", "InputSpec", "Isolation", "LayerTolerance",
           "ModelSpec", "ProviderSpec", "Sweep", "Tolerance", "canonical_provider", "config_in",
           "find_config", "load_config"]
