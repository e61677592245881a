"""The process-wide PyTorch settings that change how a run computes (TF32, cuDNN autotuning and
determinism, reduced-precision reductions, float32 matmul precision), recorded with each torch
provider's run: a model's code can flip any of them, and the verdict names the one that moved. A
setting torch refuses to read is recorded as ``"unreadable: <error>"``, a change worth seeing too."""

from __future__ import annotations

from collections.abc import Callable

import torch

# flag name, as a user writes it -> its reader
FLAGS: dict[str, Callable[[], object]] = {
    "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision,
    "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
    "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
    "torch.backends.cudnn.benchmark": lambda: torch.backends.cudnn.benchmark,
    "torch.backends.cudnn.deterministic": lambda: torch.backends.cudnn.deterministic,
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
        lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
        lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    "torch.are_deterministic_algorithms_enabled()": torch.are_deterministic_algorithms_enabled,
    # the fp32_precision API of newer torch releases (absent in older ones: not recorded there)
    "torch.backends.cuda.matmul.fp32_precision": lambda: torch.backends.cuda.matmul.fp32_precision,
    "torch.backends.cudnn.conv.fp32_precision": lambda: torch.backends.cudnn.conv.fp32_precision,
    "torch.backends.mkldnn.matmul.fp32_precision": lambda: torch.backends.mkldnn.matmul.fp32_precision,
    "torch.backends.mkldnn.conv.fp32_precision": lambda: torch.backends.mkldnn.conv.fp32_precision,
}


def _read(reader: Callable[[], object]) -> str | None:
    try:
        return str(reader())
    except AttributeError:  # this torch has no such setting
        return None
    except Exception as exc:  # noqa: BLE001 - torch raises RuntimeError for mixed TF32 APIs
        return f"unreadable: {type(exc).__name__}"


def settings() -> dict[str, str]:
    out = {name: _read(reader) for name, reader in FLAGS.items()}
    return {k: v for k, v in sorted(out.items()) if v is not None}
