"""PyTorch eager as a provider (``torch-cpu``, ``torch-cuda``): every module call hooked, on
the provider's device, in its precision."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from gate.core import device
from gate.core.failure import ModelError
from gate.core.runs import ProviderRun, latency
from gate.core.status import ErrorStatus
from gate.core.target import Target
from gate.model import torch_hooks
from gate.runners import torch_numerics
from gate.runners.base import Runner, Subject, Unavailable
from gate.runners.gradients import gradients
from gate.verdict import against_reference


class TorchEagerRunner(Runner):
    absent_reason = "not called in this run"

    @property
    def on_cuda(self) -> bool:
        return self.spec.device == "cuda"

    def target(self) -> Target:
        if not self.on_cuda:
            return Target(self.name, device.cpu_class(), self.spec.precision)
        import torch

        cls = (device.cuda_class(torch.cuda.get_device_name(), torch.cuda.get_device_capability())
               if torch.cuda.is_available() else device.GPU)
        return Target(self.name, cls, self.spec.precision)

    def precheck(self, subject: Subject) -> None:
        import torch

        if self.on_cuda and not torch.cuda.is_available():
            raise Unavailable(f"skipped: {self.name} not available here (no CUDA device)")

    def prepare(self, subject: Subject) -> None:
        import torch

        super().prepare(subject)
        if subject.built is None:
            raise ModelError(f"{self.name} needs the PyTorch model, which is not built here", ErrorStatus.LOAD_FAIL)
        dtype = {"float32": None, "float16": torch.float16, "bfloat16": torch.bfloat16}[self.spec.precision]
        where = "cuda" if self.on_cuda else "cpu"
        subject.built.restore()  # the model as built: nothing the reference or the export cached in it
        module = subject.built.module
        if dtype is not None or self.on_cuda:  # never touch the instance the reference and export use
            module = copy.deepcopy(module).to(device=where, dtype=dtype) if dtype else copy.deepcopy(module).cuda()
        self.module = module
        self.inputs = tuple(t.to(device=where, dtype=dtype if dtype is not None and t.is_floating_point() else t.dtype)
                            for t in subject.built.inputs)

    def capture(self) -> tuple[dict[str, Any], object]:
        """(fingerprints by layer, what the forward returned)."""
        capture = torch_hooks.Capture(self.module)
        return {r.name: r.fp for r in capture.run(self.inputs)}, capture.output

    def forward(self):
        """What the timed runs call: the module itself, no hooks."""
        return self.module

    def timed(self, repeats: int) -> list[float]:
        """Wall time of ``repeats`` forward passes (ms) after the captured one warmed up."""
        import time

        import torch

        from gate.model.build import inference_mode, unshared

        fn, times = self.forward(), []
        with inference_mode():
            for _ in range(repeats):
                if self.on_cuda:
                    torch.cuda.synchronize()
                args = unshared(self.inputs)
                start = time.perf_counter()
                fn(*args)
                if self.on_cuda:
                    torch.cuda.synchronize()
                times.append((time.perf_counter() - start) * 1e3)
        return times

    def run(self) -> ProviderRun:
        try:
            fingerprints, output = self.capture()
            spec = self.subject.built.spec
            if spec.gradients:  # the backward pass, in this provider's precision, after the forward
                grads = gradients(self.module, self.inputs, spec.seed, self.forward())
                fingerprints.update((r.name, r.fp) for r in grads)
        except Exception as exc:  # noqa: BLE001 - a provider that cannot run is a status, not a crash
            raise ModelError.of(f"model `{self.subject.run.name}`: {self.name} ({self.spec.precision}) failed: "
                                f"{type(exc).__name__}: {str(exc)[:300]}",
                                ErrorStatus.INFER_FAIL, exc) from None
        run = self.subject.run
        prun = against_reference.layers(ProviderRun(self.target(), numerics=torch_numerics.settings()), fingerprints,
                                        run.layers, self.absent_reason)
        if self.subject.repeats:
            prun.latency_ms, prun.latency_p90_ms = latency(self.timed(self.subject.repeats))
        against_reference.outputs(prun, [torch_hooks.to_numpy(t) for _, t in torch_hooks.flatten(output)], run.layers,
                                  self.subject.outputs, self.subject.output_tolerance)
        return prun

    def close(self) -> None:
        built = self.subject.built if getattr(self, "subject", None) is not None else None
        self.module = self.inputs = None
        if built is not None:
            with contextlib.suppress(ModelError):  # a forward that changed its weights failed its run already
                built.restore()  # what this run cached goes, for the runs after it
        super().close()
