"""Models whose module calls return several outputs of one shape, for the layer map's tests
(``test_layermap``, ``e2e/test_layermap_wires``): matching by shape or by production order
crosses their wires."""

from __future__ import annotations

import torch
from torch import nn


class Inner(nn.Module):
    """Returns a dict whose elements share a shape, out of production order, one of them also
    used inside the call and one nested in a tuple."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> dict:
        early = torch.tanh(self.a(x))
        middle = early * scale + 1
        late = torch.sigmoid(self.b(middle))
        return {"late": late, "early": early, "pair": (middle - 2, late * 3)}


class DictWrapper(nn.Module):
    """A user's wrapper calling a model that returns a dict, with keywords, twice."""

    def __init__(self, swap: bool = False):
        super().__init__()
        self.inner = Inner()
        self.head = nn.Linear(8, 4)
        self.swap = swap  # the second call passes its keywords in another order

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first = self.inner(x=x, scale=torch.full_like(x, 0.5))
        if self.swap:
            second = self.inner(scale=torch.full_like(x, 2.0), x=first["late"])
        else:
            second = self.inner(x=first["late"], scale=torch.full_like(x, 2.0))
        return self.head(second["early"] + first["pair"][1])


def dict_wrapper() -> nn.Module:
    torch.manual_seed(0)
    return DictWrapper()


def dict_wrapper_swapped() -> nn.Module:
    """``torch.export`` records a call's signature only when every call passes the same structure:
    keywords in another order are another structure, and this module's outputs go unrecorded."""
    torch.manual_seed(0)
    return DictWrapper(swap=True)


class ClipWrapper(nn.Module):
    """A user's wrapper calling a Hugging Face ``CLIPModel`` with keywords; only one of its outputs
    is returned, the others (same-shaped embeddings and logits) stay inside."""

    def __init__(self, attention: str = "sdpa"):
        super().__init__()
        from transformers import CLIPConfig, CLIPModel

        common = dict(hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4)
        config = CLIPConfig(text_config=dict(common, vocab_size=99, max_position_embeddings=16),
                            vision_config=dict(common, image_size=32, patch_size=8), projection_dim=16)
        config._attn_implementation = attention
        config.text_config._attn_implementation = config.vision_config._attn_implementation = attention
        self.m = CLIPModel(config)

    def forward(self, pixel_values, input_ids, attention_mask):
        out = self.m(pixel_values=pixel_values, input_ids=input_ids, attention_mask=attention_mask)
        return out.logits_per_image


def clip() -> nn.Module:
    torch.manual_seed(0)
    return ClipWrapper()


def clip_eager() -> nn.Module:
    """Eager attention returns the attention weights too."""
    torch.manual_seed(0)
    return ClipWrapper("eager")


def clip_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    """Two images and two texts: the image and text embeddings, and both logits, share a shape."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[1, 5:] = 0
    return torch.randn(2, 3, 32, 32, generator=g), torch.randint(0, 99, (2, 7), generator=g), mask


class Recurrent(nn.Module):
    """An LSTM returns (output, (h, c)): h and c share a shape, all three are elements of one op."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 8, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, (h, c) = self.lstm(x)
        return self.head(y[:, -1] + h[0] + c[0])


def recurrent() -> nn.Module:
    torch.manual_seed(0)
    return Recurrent()


class PassesItsListOn(nn.Module):
    """Like torchvision's FPN LastLevelMaxPool: appends a pooled level to the list it was given and
    returns that list, whose other elements are its callers' tensors, computed elsewhere."""

    def forward(self, levels: list[torch.Tensor]) -> tuple[list[torch.Tensor], int]:
        levels.append(nn.functional.max_pool2d(levels[-1], 1, 2, 0))
        return levels, len(levels)


class Pyramid(nn.Module):
    """A feature pyramid: its blocks in ModuleLists that are iterated, never called (TorchScript names
    their nodes ``/inner/inner.1/Conv`` without a scope for the list), levels of one channel count
    whose sizes are symbolic in the graph when the input's are."""

    def __init__(self):
        super().__init__()
        self.stem = nn.ModuleList([nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 4, 3, stride=2, padding=1)])
        self.inner = nn.ModuleList([nn.Conv2d(4, 4, 1) for _ in range(2)])
        self.extra = PassesItsListOn()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        feats = []
        for conv in self.stem:
            x = torch.relu(conv(x))
            feats.append(x)
        levels = []
        for i, block in enumerate(self.inner):
            levels.append(block(feats[i]))
        levels, _ = self.extra(levels)
        return tuple(levels)


def pyramid() -> nn.Module:
    torch.manual_seed(0)
    return Pyramid()


class Boxed:
    """Not a tensor, nor anything ``torch.utils._pytree`` flattens."""

    def __init__(self, value: torch.Tensor):
        self.value = value


class Switches(nn.Module):
    """Returns a tensor, except while ONNX is exported: then a ``Boxed`` one, whose signature
    ``torch.export`` cannot record."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor):
        y = torch.relu(self.lin(x))
        return Boxed(y) if torch.onnx.is_in_onnx_export() else y


class FlagSwitch(nn.Module):
    def __init__(self):
        super().__init__()
        self.switch, self.head = Switches(), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.switch(x)
        return self.head(y.value if isinstance(y, Boxed) else y)


def flag_switch() -> nn.Module:
    """A module whose calls change while ONNX is exported: the probe's forward (without the flag)
    finds it recordable, the export's trace does not."""
    torch.manual_seed(0)
    return FlagSwitch()


class LstmStack(nn.Module):
    """Two LSTMs, the second starting from the first's final state: each call's h and c share a
    shape, and the TorchScript exporter records no call's outputs."""

    def __init__(self):
        super().__init__()
        self.first = nn.LSTM(8, 8, batch_first=True)
        self.second = nn.LSTM(8, 8, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, (h, c) = self.first(x)
        z, (h2, c2) = self.second(y, (h, c))
        return self.head(z[:, -1] + h2[0] + c2[0])


def lstm_stack() -> nn.Module:
    torch.manual_seed(0)
    return LstmStack()


def _first_c_scaled(proto, factor: float):
    """A transform: the first LSTM's final cell state, as the graph computes it, scaled by ``factor``
    (a runtime that computes that one value wrongly; everything that reads it reads the fault)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    at, node = next((i, n) for i, n in enumerate(proto.graph.node)
                    if n.op_type == "LSTM" and "first" in n.name)
    cell = node.output[2]
    node.output[2] = cell + "_computed"
    scale = numpy_helper.from_array(np.array(factor, dtype=np.float32), "first_c_scale")
    proto.graph.initializer.append(scale)
    proto.graph.node.insert(at + 1, onnx.helper.make_node("Mul", [node.output[2], scale.name], [cell]))
    return proto


def first_c_by_3e_6(proto):
    """Past the error the baseline allows, within float32 rounding of torch's value."""
    return _first_c_scaled(proto, 1 + 3e-6)


def first_c_by_1e_3(proto):
    """Past float32 rounding of torch's value: none of the same-shaped values holds torch's numbers."""
    return _first_c_scaled(proto, 1 + 1e-3)


def first_h_c_swapped(proto):
    """A transform: the first LSTM's final hidden and cell states trade places (a runtime that writes
    each into the other's output): each still holds one of torch's values, under the other's name."""
    node = next(n for n in proto.graph.node if n.op_type == "LSTM" and "first" in n.name)
    node.output[1], node.output[2] = node.output[2], node.output[1]
    return proto


class Cache:
    """A key cache as a pytree-registered container (as transformers' ``DynamicCache`` is)."""

    def __init__(self, keys: list | None = None):
        self.keys = list(keys or [])


torch.utils._pytree.register_pytree_node(
    Cache, lambda c: (c.keys, None), lambda keys, _: Cache(keys),
    flatten_with_keys_fn=lambda c: ([(torch.utils._pytree.SequenceKey(i), k) for i, k in enumerate(c.keys)],
                                    None))


class CachingLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, cache: Cache) -> torch.Tensor:
        y = self.proj(x)
        cache.keys.append(y * 2)  # the caller's cache: a recorded call would add to a copy
        return torch.relu(y)


class Cached(nn.Module):
    """Returns its output and the cache its layers filled."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([CachingLayer(), CachingLayer()])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, Cache]:
        cache = Cache()
        for layer in self.layers:
            x = layer(x, cache)
        return x, cache


def cached() -> nn.Module:
    torch.manual_seed(0)
    return Cached()
