"""Post-export transforms: what teams do to the exported graph before it ships (the ONNX Runtime
transformer optimizer, float16 conversion, int8 quantization). ``transform = "module:function"``
takes an ``onnx.ModelProto`` and returns the one that ships; the gate checks that one."""

from __future__ import annotations

from pathlib import Path

import onnx

from gate.config import ModelSpec
from gate.core.refs import resolve
from gate.core.status import ErrorStatus
from gate.errors import ConfigError, ModelError


def apply(spec: ModelSpec, proto: onnx.ModelProto, root: Path) -> onnx.ModelProto:
    fn = resolve(spec.transform, root, f"{spec.where}.transform")
    try:
        out = fn(proto)
    except Exception as exc:
        raise ModelError.of(f"model `{spec.name}`: transform `{spec.transform}` raised {type(exc).__name__}: {exc}",
                            ErrorStatus.EXPORT_FAIL, exc) from None
    if not isinstance(out, onnx.ModelProto):
        raise ConfigError(f"`{spec.where}.transform`: `{spec.transform}` returned {type(out).__name__}, "
                          "not an onnx.ModelProto")
    return out
