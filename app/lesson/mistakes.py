"""Attention computed with one of three classic mistakes, stage by stage, to set beside the right one.

References:
  Vaswani et al., "Attention Is All You Need" (2017), section 3.2.1:
      Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V, the mask applied before the softmax
      (section 3.2.3: "setting to −∞ all values in the input of the softmax").
  app/attention.py: the right computation, whose stage names these keep.

  no-scale             skips ÷√d_k: scaled = scores, so large d_k saturates the softmax
  softmax-columns      normalises each column (axis −2) instead of each row: every key's
                       weights sum to 1 over the queries, a query's row no longer does
  mask-after-softmax   softmax of the unmasked scaled scores, then hidden keys set to 0:
                       the rows no longer sum to 1 (masked equals scaled: nothing is hidden
                       before the softmax, which is the mistake)

Shapes as in app.attention: q, k (…, n, d_k), v (…, n, d_v), with an optional leading head
axis. Arithmetic is float64, NumPy only. This module imports nothing from the web side.
"""

from __future__ import annotations

import math

import numpy as np

from app.attention import MISTAKES as MISTAKES
from app.attention import Mask, Stages, check_shapes, visible
from app.attention import Mistake as Mistake


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """exp(x) / Σ exp(x) along axis, shifted by the maximum (finite: every row and column keeps a
    visible cell, the diagonal); −∞ gives exactly 0."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))  # same shape as x
    return e / e.sum(axis=axis, keepdims=True)  # type: ignore[no-any-return]


def with_mistake(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Mask, mistake: Mistake) -> Stages:
    """Every stage of attention on q, k, v, computed with `mistake` (see the module docstring)."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    check_shapes(q, k, v)
    if mistake not in MISTAKES:
        raise ValueError(f"mistake must be one of {MISTAKES}, got {mistake!r}")
    n, d_k = q.shape[-2], q.shape[-1]
    hidden = ~visible(n) if mask == "causal" else np.zeros((n, n), dtype=bool)  # (n, n)
    scores = q @ np.swapaxes(k, -1, -2)  # (…, n, n)
    scaled = scores if mistake == "no-scale" else scores / math.sqrt(d_k)  # (…, n, n)
    if mistake == "mask-after-softmax":
        masked = scaled  # (…, n, n): the mask is not applied before the softmax
        weights = np.where(hidden, 0.0, softmax(scaled, axis=-1))  # (…, n, n): rows sum to < 1
    else:
        masked = np.where(hidden, -np.inf, scaled) if mask == "causal" else scaled  # (…, n, n)
        weights = softmax(masked, axis=-2 if mistake == "softmax-columns" else -1)  # (…, n, n)
    output = weights @ v  # (…, n, d_v)
    return Stages(scores=scores, scaled=scaled, masked=masked, weights=weights, output=output)
