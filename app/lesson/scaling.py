"""Why attention divides by √d_k: the spread of q·k grows with d_k, and softmax saturates.

References:
  Vaswani et al., "Attention Is All You Need" (2017), section 3.2.1 and its footnote 4: if the
      entries of q and k are independent with mean 0 and variance 1, then q·k = Σ_i q_i k_i has
      mean 0 and variance d_k; large dot products push softmax into regions with tiny gradients,
      so the scores are scaled by 1/√d_k.
  The lesson's step 2 (√d_k keeps the scores moderate, so the softmax stays soft) and its common
      mistake of forgetting the scale (app/lesson/mistakes.py, "no-scale").

Everything is drawn from one fixed seed, so a d_k always gives the same numbers. Stages, by name:

  dots        q_s·k_s for SAMPLES independent pairs of unit-variance vectors    (SAMPLES,)
  std         their measured standard deviation (≈ √d_k)
  query, keys one query and KEYS keys, unit variance                              (d_k,), (KEYS, d_k)
  scores      keys·query: the query's row of scores                               (KEYS,)
  unscaled    softmax(scores): the row without the division                       (KEYS,)
  scaled      softmax(scores / √d_k): the row attention really uses               (KEYS,)
  max_*       each row's largest weight (1 = one-hot)
  entropy_*   each row's entropy −Σ w·ln w, in nats: ln KEYS when even, 0 when one-hot
  mean_*      the same two measures averaged over QUERIES queries (the first is the one query):
              one query can be lucky, the mean shows the trend

This module imports nothing from the web side of the app.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SEED = 1706  # arXiv 1706.03762, "Attention Is All You Need"
SAMPLES = 4096  # (q, k) pairs whose dot products give the measured spread
KEYS = 8  # keys in the one query's row of softmax
QUERIES = 512  # queries against the same keys, whose mean max weight and entropy the chart shows
MIN_D_K, MAX_D_K = 2, 1024
SWEEP = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)  # the d_k of the chart


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, shifted by each row's maximum so that exp() never overflows."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (..., KEYS)
    w: np.ndarray = e / e.sum(axis=-1, keepdims=True)  # (..., KEYS)
    return w


def entropy(w: np.ndarray) -> float:
    """−Σ w·ln w in nats, with 0·ln 0 = 0 (a one-hot row has entropy 0)."""
    nz = w[w > 0]  # (m,) the terms that are not 0·ln 0
    return float(-(nz * np.log(nz)).sum()) + 0.0  # + 0.0: a one-hot row's −0.0 becomes 0.0


@dataclass(frozen=True)
class Scaling:
    d_k: int
    sqrt_d_k: float
    dots: np.ndarray  # (SAMPLES,)
    std: float
    query: np.ndarray  # (d_k,)
    keys: np.ndarray  # (KEYS, d_k)
    scores: np.ndarray  # (KEYS,)
    unscaled: np.ndarray  # (KEYS,)
    scaled: np.ndarray  # (KEYS,)
    max_unscaled: float
    max_scaled: float
    entropy_unscaled: float
    entropy_scaled: float
    mean_max_unscaled: float
    mean_max_scaled: float
    mean_entropy_unscaled: float
    mean_entropy_scaled: float


def measure(d_k: int) -> Scaling:
    """The spread of q·k and one query's softmax with and without ÷√d_k, for this d_k (2 … 1024)."""
    if not MIN_D_K <= d_k <= MAX_D_K:
        raise ValueError(f"d_k must be {MIN_D_K} … {MAX_D_K}, got {d_k}")
    rng = np.random.default_rng([SEED, d_k])
    q = rng.standard_normal((SAMPLES, d_k))  # (SAMPLES, d_k) unit variance
    k = rng.standard_normal((SAMPLES, d_k))  # (SAMPLES, d_k)
    dots = np.einsum("sd,sd->s", q, k)  # (SAMPLES,) one dot product per pair
    std = float(dots.std())  # population std (ddof = 0)
    queries = rng.standard_normal((QUERIES, d_k))  # (QUERIES, d_k); row 0 is the one query shown
    keys = rng.standard_normal((KEYS, d_k))  # (KEYS, d_k)
    all_scores = queries @ keys.T  # (QUERIES, KEYS)
    root = math.sqrt(d_k)
    all_unscaled, all_scaled = softmax(all_scores), softmax(all_scores / root)  # (QUERIES, KEYS) each
    unscaled, scaled = all_unscaled[0], all_scaled[0]  # (KEYS,) each
    return Scaling(
        d_k, root, dots, std, queries[0], keys, all_scores[0], unscaled, scaled,
        float(unscaled.max()), float(scaled.max()), entropy(unscaled), entropy(scaled),
        float(all_unscaled.max(axis=1).mean()), float(all_scaled.max(axis=1).mean()),
        float(np.mean([entropy(r) for r in all_unscaled])), float(np.mean([entropy(r) for r in all_scaled])),
    )  # fmt: skip


def sweep() -> list[Scaling]:
    """measure() at d_k = 2, 4, … 1024: the chart of spread and saturation against d_k."""
    return [measure(d) for d in SWEEP]
