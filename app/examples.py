"""The worked examples of the seed texts, as data.

- "the-cat-ate-its-fish": hand-picked 2-D vectors, so every number can be followed
  by hand. "its" (q = [2, 0]) puts 0.895 of its attention on "cat" and mixes z ≈ [0.903, 0.059];
  under the causal mask "cat" sees only "the" and itself and splits 50 / 50.
- "select-from-customers": a causal decoder demo with random projections, regenerated from its
  recipe: NumPy's random seed 42, then X, W_Q, W_K, W_V drawn in that order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.attention import Mask


@dataclass(frozen=True)
class Example:
    id: str
    title: str
    source: str
    description: str
    tokens: tuple[str, ...]
    q: np.ndarray  # (n, d_k)
    k: np.ndarray  # (n, d_k)
    v: np.ndarray  # (n, d_v)
    mask: Mask


def _cat_ate_its_fish() -> Example:
    return Example(
        id="the-cat-ate-its-fish",
        title="the cat ate its fish",
        source="the lesson's worked example: hand-picked vectors",
        description=(
            "Five words with hand-picked 2-D vectors. 'its' asks for an owner (q = [2, 0]) and "
            "'cat' answers best (k = [3, 0]), so 'its' takes most of its new vector from 'cat'."
        ),
        tokens=("the", "cat", "ate", "its", "fish"),
        q=np.array([[1.5, 0], [0, 1.2], [1.2, 0], [2, 0], [0, 1.5]]),
        k=np.array([[0, 0], [3, 0], [0, 3], [0.5, 0], [1, 0.5]]),
        v=np.array([[0, 0], [1, 0], [0, 0.5], [0.3, 0], [0, 1]]),
        mask="full",
    )


def select_from_customers_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The decoder example's X, W_Q, W_K, W_V: NumPy's random seed 42, then drawn in that order (q = X·W_Q, …)."""
    n, d_k = 4, 8
    rng = np.random.RandomState(42)  # the same stream as np.random.seed(42) + np.random.randn
    x = rng.randn(n, d_k)  # (n, d_k) token embeddings
    w_q, w_k, w_v = rng.randn(d_k, d_k), rng.randn(d_k, d_k), rng.randn(d_k, d_k)  # (d_k, d_k) each
    return x, w_q, w_k, w_v


def _select_from_customers() -> Example:
    x, w_q, w_k, w_v = select_from_customers_inputs()
    return Example(
        id="select-from-customers",
        title="SELECT * FROM customers",
        source="the lesson's decoder example: NumPy's random seed 42",
        description=(
            "A decoder's view of four SQL tokens, d_k = 8, with random projections "
            "(seed 42: X, then W_Q, W_K, W_V). Causal: 'SELECT' sees only itself, "
            "'customers' sees everything before it."
        ),
        tokens=("SELECT", "*", "FROM", "customers"),
        q=x @ w_q,
        k=x @ w_k,
        v=x @ w_v,
        mask="causal",
    )


EXAMPLES: dict[str, Example] = {e.id: e for e in (_cat_ate_its_fish(), _select_from_customers())}
DEFAULT_EXAMPLE = "the-cat-ate-its-fish"
