"""The model's data and its digests: every parameter, buffer and tensor attribute, and its state dict's other
entries, hashed whole and per entry, and each tensor's values as a multiset (``value_sums``), so a check
tells which tensors changed, and a re-expression that only moves values, from one that changes them."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch

from gate import env
from gate.core.background import Background
from gate.model.pristine import version_of


@dataclass(frozen=True)
class WeightsDigest:
    total: str  # sha256 of every entry's sha256, in name order: equal weights, equal digest
    tensors: dict[str, str]  # per tensor of the model's data, a short digest: which tensors changed
    sums: dict[str, str]  # per tensor of the model's data, its values as a multiset (``value_sums``)
    stale: bool = False  # a forward wrote into a tensor while it was hashed: hash again from the state built


TENSOR_DIGEST = 16  # hex characters kept per tensor: a collision is a 1 in 2**64 chance
THREADS = min(4, env.usable_cpus())  # entries hashed and summed at once
RULE = b"parity-gate weights v2\n"  # v1 hashed the entries as one stream: another total for the same weights
# the tensors' digests and value sums a baseline recorded
Known = tuple[dict[str, str], dict[str, str] | None]
# one entry of the model's data: name, header, bytes, dtype, and the tensors whose versions a forward may move
_Part = tuple[str, bytes, np.ndarray, torch.dtype, tuple[tuple[torch.Tensor, int | None], ...]]


def held(module: torch.nn.Module) -> dict[str, object]:
    """The model's data: every parameter and buffer, whatever its ``state_dict()`` keeps out (a frozen
    backbone no checkpoint saves, a ``persistent=False`` rotary ``inv_freq``), which its forward reads all
    the same, what its state dict holds beyond them (tied weights by every name, a module's
    ``get_extra_state()``, a quantized module's packed weights), and the tensors its modules hold as plain
    attributes (a table loaded from a file, a mask built in ``__init__``): data as a buffer is."""
    out = {**module.state_dict(), **dict(module.named_parameters()), **dict(module.named_buffers())}
    return {**out, **attributes(module, {id(t) for t in out.values()})}


def attributes(module: torch.nn.Module, taken: set[int] | None = None) -> dict[str, torch.Tensor]:
    """Tensors the modules hold as plain attributes (neither parameter nor buffer), by qualified name,
    each once, none of ``taken`` (ids of tensors already named)."""
    out: dict[str, torch.Tensor] = {}
    seen = set(taken or ())
    for prefix, mod in module.named_modules():
        for name, value in vars(mod).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter) \
                    and id(value) not in seen:
                seen.add(id(value))
                out[f"{prefix}.{name}" if prefix else name] = value
    return out


def data(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The tensors of the model's data (``held``)."""
    return {name: t for name, t in held(module).items() if isinstance(t, torch.Tensor)}


class Undigestible(Exception):
    """A state dict entry with no bytes that are the same for the same value in every process."""

    def __init__(self, name: str, value: object):
        super().__init__(f"its state dict entry `{name}` holds a `{type(value).__qualname__}`, which has no "
                         "bytes the same in every process to digest: keep tensors, arrays, numbers, strings, "
                         "and lists, tuples and dicts of them there")


def weights_digest(module: torch.nn.Module, known: Known | None = None) -> Background[WeightsDigest]:
    """sha256 over the model's data (``held``: names, dtypes, shapes, bytes), as the sha256 of each entry's
    sha256 in name order, hashed on threads from views taken here (nothing the exporter does meanwhile
    changes them): the entries hash at once, not one stream on one CPU. Each entry's value sums are
    ``known``'s where its digest is the one recorded there."""
    parts: list[_Part] = []
    for name, value in sorted(held(module).items()):
        if isinstance(value, torch.Tensor):
            quantized, array = _values(value)
            header = f"{name}|{value.dtype}|{tuple(value.shape)}|{quantized}".encode()
            parts.append((name, header, array, value.dtype, ((value, version_of(value)),)))
        else:  # copied here: bytes no later write reaches
            header = f"{name}|{type(value).__qualname__}|".encode()
            parts.append((name, header, np.frombuffer(_encoded(value, name), np.uint8), torch.uint8, ()))

    def sha256() -> WeightsDigest:
        with ThreadPoolExecutor(THREADS) as pool:  # sha256 and NumPy let go of the GIL: one entry a thread
            whole = list(pool.map(lambda p: _one(p[1], p[2]), parts))  # sha256 (SHA extensions) beats blake2b
            total = hashlib.sha256(RULE + b"".join(whole)).hexdigest()
            tensors = {p[0]: digest.hex()[:TENSOR_DIGEST] for p, digest in zip(parts, whole, strict=True)}
            sums = _sums(parts, tensors, known, pool)
        # the first forward runs while this hashes: one that wrote into a weight leaves no trustworthy digest
        stale = any(version_of(t) != version for *_, watched in parts for t, version in watched)
        return WeightsDigest(total, tensors, sums, stale)

    return Background(sha256)


def _sums(parts: list[_Part], tensors: dict[str, str], known: Known | None,
          pool: ThreadPoolExecutor) -> dict[str, str]:
    """Each tensor's ``value_sums``, in name order: the baseline's where it recorded the tensor with the
    digest it has now (the same header and bytes: the same sums), computed for the rest. A weight change
    sums the tensors it changed, not the model."""
    digests, recorded = (known[0], known[1] or {}) if known is not None else ({}, {})
    todo = [p for p in parts if not (p[0] in recorded and digests.get(p[0]) == tensors[p[0]])]
    summed = dict(zip([p[0] for p in todo], pool.map(lambda p: value_sums(p[2], p[3]), todo), strict=True))
    return {name: summed[name] if name in summed else recorded[name] for name, *_ in parts}


_WIDTH = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _values(tensor: torch.Tensor) -> tuple[str, np.ndarray]:
    """(a quantized tensor's scales and zero points, ``|``-ended, else nothing; its values as NumPy holds
    them): a quantized tensor's integers, a dtype NumPy lacks (bfloat16, float8) as the integers of its
    width, a view where it can be (nothing the exporter does meanwhile changes them)."""
    t = tensor.detach().cpu()
    quantized = ""
    if t.is_quantized:
        if t.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
            quantized = f"{t.q_scale()!r},{t.q_zero_point()}|"
        else:
            scales, zeros = t.q_per_channel_scales().tolist(), t.q_per_channel_zero_points().tolist()
            quantized = f"{scales},{zeros},{t.q_per_channel_axis()}|"
        t = t.int_repr()
    t = t.contiguous()
    try:
        return quantized, np.ascontiguousarray(t.numpy())
    except TypeError:  # bfloat16, float8, complex32
        return quantized, np.ascontiguousarray(t.view(_WIDTH[t.element_size()]).numpy())


def _encoded(value: object, name: str) -> bytes:
    """A state dict entry that is no tensor as bytes that are the same for the same value in any process:
    tensors and arrays by dtype, shape and bytes, the rest by ``repr``, containers in their order. Any
    other object's ``repr`` may hold its address, a set's its hash order: ``Undigestible``."""
    if isinstance(value, torch.Tensor):
        quantized, array = _values(value)
        return f"{value.dtype}{tuple(value.shape)}{quantized}:".encode() + array.tobytes()
    if isinstance(value, np.ndarray) and not value.dtype.hasobject:
        return f"{value.dtype.str}{value.shape}:".encode() + np.ascontiguousarray(value).tobytes()
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, torch.dtype, torch.device,
                                           np.number, np.bool_)):
        return repr(value).encode()
    if isinstance(value, (list, tuple)):
        items = [_encoded(v, name) for v in value]
    elif isinstance(value, dict):
        items = [_encoded(k, name) + b":" + _encoded(v, name) for k, v in value.items()]
    else:
        raise Undigestible(name, value)
    return f"{type(value).__qualname__}(".encode() + b",".join(items) + b")"


def _one(header: bytes, array: np.ndarray) -> bytes:
    one = hashlib.sha256(header)
    one.update(array.reshape(-1).view(np.uint8).data)  # the bytes of tobytes(), without the copy
    return one.digest()


SUM_CHUNK = 1 << 18  # elements widened at a time: in a core's cache, 0.7x the sha256 pass's time


def value_sums(array: np.ndarray, dtype: torch.dtype) -> str:
    """A tensor's values as a multiset: ``size.count.S1S2``, how many there are, how many have a nonzero
    float64 (integers: int64) bit pattern, and the sums of those patterns and of a hash of each, mod 2**64.
    They add over tensors, and a re-expression that only moves values (a split, a merge, a rename, an exact
    upcast, zeros added) keeps their total; any changed value changes S1, and changes that cancel in S1
    almost never cancel in S2."""
    flat = array.reshape(-1)
    count = s1 = s2 = 0
    for i in range(0, flat.size, SUM_CHUNK):
        part = flat[i:i + SUM_CHUNK]
        if dtype == torch.bfloat16:  # held as its int16 bits: the float32 with those upper bits
            part = (part.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        kind = part.dtype.kind
        wide = part.astype(np.float64) if kind == "f" else part.astype(np.int64) if kind in "biu" else \
            part.view(np.uint8).astype(np.int64)  # complex and the rest: their bytes
        u = wide.view(np.uint64)
        count += int(np.count_nonzero(u))
        s1 += int(u.sum(dtype=np.uint64))
        h = u ^ (u >> np.uint64(32))  # float32's float64 patterns end in 29 zero bits: fold the top down
        h *= np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)  # zero stays zero: zeros add nothing, as to S1
        s2 += int(h.sum(dtype=np.uint64))
    return f"{flat.size}.{count}.{s1 % 2**64:016x}{s2 % 2**64:016x}"
