"""From a sentence's trace to the stages the API shows: one layer and head, or a mean.

  layer L, head H         that head's real q, k, v and every stage of attention on them
  layer L, head None      all heads of layer L: every field gains a leading head axis
  layer L, head "mean"    every field averaged over the heads of layer L (weights rows still sum to 1)
  layer "mean", head …    the same, then averaged over the layers (head H: head H of every layer)

A mean is taken field by field: weights is the mean of the heads' weights, output the mean
of their outputs, and q, k, v the mean of their vectors (a summary, not a real query).
Stages are recomputed by app.attention from the model's q, k, v with the requested mask,
so "causal" on an encoder shows what a head would do if it could not see later tokens.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from app.attention import Backend, Mask, attention
from app.model.trace import Trace

LayerChoice = int | Literal["mean"]
HeadChoice = int | Literal["mean"] | None
FIELDS = ("q", "k", "v", "scores", "scaled", "masked", "weights", "output")


def mean_over(layer: LayerChoice, head: HeadChoice) -> list[str]:
    """Which axes a selection averages, in the order they are averaged."""
    return (["heads"] if head == "mean" else []) + (["layers"] if layer == "mean" else [])


def select(
    trace: Trace, layer: LayerChoice, head: HeadChoice, mask: Mask, backend: Backend = "numpy"
) -> dict[str, np.ndarray]:
    """The named arrays q, k, v, scores, scaled, masked, weights, output of a selection."""
    layers = range(len(trace.q)) if layer == "mean" else [layer]
    heads = slice(head, head + 1) if isinstance(head, int) else slice(None)
    total: dict[str, np.ndarray] = {}
    for i in layers:
        q, k, v = trace.q[i][heads], trace.k[i][heads], trace.v[i][heads]  # (h, n, d)
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
    layers = zip(trace.q, trace.k, trace.v, strict=True)
    return np.stack([attention(q, k, v, mask, backend).weights for q, k, v in layers])  # (L, H, n, n)
