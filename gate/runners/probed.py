"""``torch-cpu`` in float32 from the probe's capture (``gate.model.trace``): the probe already ran
exactly that forward, on the same instance and inputs, hooked the same way. The run is judged as
any other; only the forward is not repeated. Timed repeats and gradients still run here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gate.config import ProviderSpec
from gate.runners.registry import runner_for
from gate.runners.torch_eager import TorchEagerRunner

if TYPE_CHECKING:
    from gate.model.trace import Probe


class ProbedRunner(TorchEagerRunner):
    def __init__(self, spec: ProviderSpec, probe: Probe) -> None:
        super().__init__(spec)
        self.probe: Probe | None = probe

    def capture(self) -> tuple[dict[str, Any], object]:
        probe, self.probe = self.probe, None  # its tensors go with this run
        assert probe is not None  # a run captures once
        return probe.fingerprints, probe.output


def probed_runner(provider: ProviderSpec, probe: Probe | None, isolated: bool) -> ProbedRunner | None:
    """The runner that takes ``provider``'s forward from ``probe``: only PyTorch eager on CPU in
    float32, in-process (what the probe computed); None for any other."""
    if probe is None or isolated or provider.precision != "float32":
        return None
    runner = runner_for(provider)
    if type(runner) is not TorchEagerRunner or runner.on_cuda:
        return None
    return ProbedRunner(provider, probe)
