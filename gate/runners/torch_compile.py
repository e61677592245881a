"""``torch.compile`` (inductor) as a provider (``torch-compile``, ``torch-compile-cuda``).

Only the model's outputs are observable: hooks inside a compiled graph would break it into
pieces and test something else, so every other layer is ``absent`` and says why.
"""

from __future__ import annotations

from typing import Any

from gate.model import torch_hooks
from gate.model.build import inference_mode, unshared
from gate.runners.torch_eager import TorchEagerRunner


class TorchCompileRunner(TorchEagerRunner):
    absent_reason = "inside the compiled graph"

    def capture(self) -> tuple[dict[str, Any], object]:
        import torch

        compiled = self.compiled = torch.compile(self.module, backend="inductor", **dict(self.spec.options))
        with inference_mode():
            output = compiled(*unshared(self.inputs))
        return {r.name: r.fp for r in torch_hooks.outputs(self.module, output)}, output

    def forward(self):
        return self.compiled
