"""A Llama model's weights as the converted folder keeps them (app.model.gguf) and the forward pass
uses them (app.model.llama): each layer's q, k, v matrices joined into one, its gate and up into
one, every kind of layer weight stacked over the layers. A leaf module (NumPy only), so that the
converter and the loader share it without importing the forward pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from app.model.weights import Weights

LAYER = "layers.{}."
# a layer's joined matrices and the separate ones they hold, top to bottom
JOINED = {
    "self_attn.qkv_proj.weight": ("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"),
    "mlp.gate_up_proj.weight": ("mlp.gate_proj.weight", "mlp.up_proj.weight"),
}
# what a layer holds once joined: the kinds stacked over the layers in the cache (stacked())
STACKED = ("input_layernorm.weight", "self_attn.qkv_proj.weight", "self_attn.o_proj.weight",
           "post_attention_layernorm.weight", "mlp.gate_up_proj.weight", "mlp.down_proj.weight")  # fmt: skip


class Sizes(Protocol):
    """What the joining needs of a model (a ModelSpec has it)."""

    @property
    def layers(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def kv_heads(self) -> int: ...
    @property
    def head_size(self) -> int: ...
    @property
    def intermediate(self) -> int: ...


def part_rows(s: Sizes, joined: str) -> list[int]:
    """The rows of each separate matrix in a joined one: q (h·d), k and v (h_kv·d); gate and up (F)."""
    if joined.startswith("self_attn"):
        return [s.heads * s.head_size, s.kv_heads * s.head_size, s.kv_heads * s.head_size]
    return [s.intermediate, s.intermediate]


def split(weights: Weights, prefix: str, joined: str, big: np.ndarray, s: Sizes) -> None:
    """The separate names of a joined matrix as row views of it (no extra memory)."""
    start = 0
    for name, rows in zip(JOINED[joined], part_rows(s, joined), strict=True):
        weights[prefix + name] = big[start : start + rows]
        start += rows


def _joined(weights: Weights, prefix: str, kind: str) -> np.ndarray:
    """Layer `prefix`'s weight `kind`, its separate matrices joined when it is one of JOINED."""
    if prefix + kind in weights or kind not in JOINED:
        return weights[prefix + kind]
    return np.concatenate([weights[prefix + n] for n in JOINED[kind]])


def stacked(weights: Weights, s: Sizes) -> dict[str, np.ndarray]:
    """The weights as the converted folder keeps them (app.model.gguf): each kind of STACKED over the
    layers, "layers.<kind>" (L, …), q/k/v and gate/up joined (`weights`: separate or joined already);
    the rest (embeddings, final norm)
    as they are. unstacked() gives them back as views, so a start maps the file instead of reading,
    joining and copying every matrix."""
    out = {
        "layers." + kind: np.stack([_joined(weights, LAYER.format(i), kind) for i in range(s.layers)])
        for kind in STACKED
    }
    out.update({name: a for name, a in weights.items() if not name.startswith("layers.")})
    return out


def unstacked(stacks: Mapping[str, np.ndarray], s: Sizes) -> Weights:
    """stacked()'s arrays (memory-mapped, say) as the forward's weights: every name a view, none copied."""
    weights: Weights = {name: a for name, a in stacks.items() if not name.startswith("layers.")}
    for i in range(s.layers):
        p = LAYER.format(i)
        for kind in STACKED:
            weights[p + kind] = stacks["layers." + kind][i]  # (·, C) or (C,)
            if kind in JOINED:
                split(weights, p, kind, weights[p + kind], s)
    return weights
