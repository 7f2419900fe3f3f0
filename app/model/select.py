"""From a sentence's trace to the stages the API shows: one layer and head, or a mean.

  layer L, head H         that head's real q, k, v and every stage of attention on them
  layer L, head None      all heads of layer L: every field gains a leading head axis
  layer L, head "mean"    every field averaged over the heads of layer L (weights rows still sum to 1)
  layer "mean", head …    the same, then averaged over the layers (head H: head H of every layer)

A mean is taken field by field: weights is the mean of the heads' weights, output the mean
of their outputs, and q, k, v the mean of their vectors (a summary, not a real query).
Stages are recomputed by app.attention, in float64, from the model's q, k, v with the requested
mask, so "causal" on an encoder shows what a head would do if it could not see later tokens.
q, k, v are given as the float64 numbers the stages were computed from (exactly the model's
float32 values), so JSON and the frame carry the same digits and q·kᵀ gives back `scores`.

A grouped-query model's trace holds its KV heads (h_kv of them, fewer than the h query heads):
heads() hands query head i the key and value heads of its group, i // (h / h_kv).

The trace must reach the layers asked for: layers 0 … L for layer L, all of them for "mean"
(layers_needed).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from app.attention import Backend, Mask, attention
from app.model.trace import Trace

LayerChoice = int | Literal["mean"]
HeadChoice = int | Literal["mean"] | None
FIELDS = ("q", "k", "v", "scores", "scaled", "masked", "weights", "output")


def layers_needed(layer: LayerChoice, layers: int) -> int:
    """How many of the model's layers a selection needs to have run."""
    return layers if layer == "mean" else layer + 1


def mean_over(layer: LayerChoice, head: HeadChoice) -> list[str]:
    """Which axes a selection averages, in the order they are averaged."""
    return (["heads"] if head == "mean" else []) + (["layers"] if layer == "mean" else [])


def select(
    trace: Trace, layer: LayerChoice, head: HeadChoice, mask: Mask, backend: Backend = "numpy"
) -> dict[str, np.ndarray]:
    """The named arrays q, k, v, scores, scaled, masked, weights, output of a selection."""
    layers = range(trace.layers) if layer == "mean" else [layer]
    heads = slice(head, head + 1) if isinstance(head, int) else slice(None)
    total: dict[str, np.ndarray] = {}
    for i in layers:
        # float64 from here on, so that the answer's q, k, v are the very numbers its scores came from
        q, k, v = (a[heads].astype(np.float64) for a in layer_heads(trace, i))  # (h, n, d)
        arrays = {"q": q, "k": k, "v": v, **attention(q, k, v, mask, backend).as_dict()}  # (h, n, ·)
        if head == "mean":
            arrays = {name: a.mean(axis=0, dtype=np.float64) for name, a in arrays.items()}  # (n, ·)
        elif isinstance(head, int):
            arrays = {name: a[0] for name, a in arrays.items()}  # (n, ·)
        total = arrays if not total else {name: total[name] + a for name, a in arrays.items()}
    if layer == "mean":
        total = {name: a / len(layers) for name, a in total.items()}
    return {name: total[name] for name in FIELDS}


def all_weights(trace: Trace, mask: Mask, backend: Backend = "numpy") -> np.ndarray:
    """Every layer's and head's attention weights, (layers, heads, n, n)."""
    layers = (layer_heads(trace, i) for i in range(trace.layers))
    return np.stack([attention(q, k, v, mask, backend).weights for q, k, v in layers])  # (L, H, n, n)


def layer_heads(trace: Trace, layer: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layer `layer`'s q, k, v with one key and value head per query head: (h, n, d) each. A
    grouped-query model's KV head j serves query heads j·g … j·g + g − 1 (g = h / h_kv)."""
    q, k, v = trace.q[layer], trace.k[layer], trace.v[layer]
    groups = q.shape[0] // k.shape[0]
    if groups == 1:
        return q, k, v
    return q, np.repeat(k, groups, axis=0), np.repeat(v, groups, axis=0)  # (h, n, d) each
