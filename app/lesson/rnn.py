"""A small recurrent network beside attention, on the same words: why transformers dropped recurrence.

References:
  Elman, "Finding Structure in Time" (1990): the simple recurrent network
      h_t = tanh(W_h·h_{t−1} + W_x·x_t),  h_0 = 0
  Bengio, Simard and Frasconi, "Learning Long-Term Dependencies with Gradient Descent is
      Difficult" (1994); Pascanu, Mikolov and Bengio, "On the difficulty of training recurrent
      neural networks" (2013), section 2: the Jacobian through t steps is a product of t factors
      diag(tanh′)·W_h, so how much an early input still counts shrinks (or blows up) with distance.
  Vaswani et al., "Attention Is All You Need" (2017), section 4 and table 1: self-attention links
      every pair of positions in one step (O(1) sequential operations); a recurrent layer needs n.
  The lesson's opening question: why RNNs failed at scale (one step per word, early words fading),
      on the words of its worked example, "the cat ate its fish".

Every number is fixed: each word's x is drawn from a generator seeded by the word itself (the same
word always gets the same x), and the network's weights from a fixed seed. Stages, by name:

  x          each word's input vector                          (n, d_x)
  h          the chain of hidden states h_1 … h_n              (n, d_h)
  jacobians  ∂h_t/∂x_1 for every t, by the chain rule          (n, d_h, d_x)
  influence  ‖∂h_t/∂x_1‖₂, the spectral norm (largest singular value) of each Jacobian: the most
             a unit change of the first word's x can move h_t   (n,)
  weights    attention's weights on the same x (q = x·W_Q, k = x·W_K, v = x·W_V)   (n, n)
  steps      sequential steps: n for the RNN (h_t waits for h_{t−1}), 1 for attention

This module imports nothing from the web side of the app.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from app.attention import attention

D_X = 4  # length of a word's input vector x
D_H = 3  # length of a hidden state: three numbers, so the 3D view draws h exactly
WEIGHT_SEED = 2013  # the network's weights (W_h, W_x) and attention's projections (W_Q, W_K, W_V)
WORD_SEED = 3  # mixed with each word's CRC-32 to seed its x
DEFAULT_WORDS = ("the", "cat", "ate", "its", "fish")


def word_vectors(words: list[str] | tuple[str, ...], d: int) -> np.ndarray:
    """A fixed vector of d standard-normal numbers for each word, seeded by the word's own bytes."""
    rows = [np.random.default_rng([WORD_SEED, zlib.crc32(w.encode())]).standard_normal(d) for w in words]
    return np.array(rows, dtype=np.float64).reshape(len(words), d)  # (n, d)


@dataclass(frozen=True)
class Weights:
    w_h: np.ndarray  # (d_h, d_h)  hidden → hidden
    w_x: np.ndarray  # (d_h, d_x)  input → hidden
    w_q: np.ndarray  # (d_x, d_x)  attention's projections, x·W
    w_k: np.ndarray  # (d_x, d_x)
    w_v: np.ndarray  # (d_x, d_x)


def weights() -> Weights:
    """The fixed weights: normal with variance 1/fan-in (the usual initialisation), one seed."""
    rng = np.random.default_rng(WEIGHT_SEED)
    w_h = rng.standard_normal((D_H, D_H)) / np.sqrt(D_H)  # (d_h, d_h)
    w_x = rng.standard_normal((D_H, D_X)) / np.sqrt(D_X)  # (d_h, d_x)
    w_q, w_k, w_v = (rng.standard_normal((D_X, D_X)) / np.sqrt(D_X) for _ in range(3))  # (d_x, d_x) each
    return Weights(w_h, w_x, w_q, w_k, w_v)


@dataclass(frozen=True)
class Rnn:
    words: list[str]
    x: np.ndarray  # (n, d_x)
    h: np.ndarray  # (n, d_h)
    jacobians: np.ndarray  # (n, d_h, d_x)
    influence: np.ndarray  # (n,)
    weights: np.ndarray  # (n, n) attention weights on the same x
    rnn_steps: int
    attention_steps: int
    params: Weights


def hidden_states(x: np.ndarray, w: Weights) -> np.ndarray:
    """h_t = tanh(W_h·h_{t−1} + W_x·x_t) from h_0 = 0, one step after another (the loop an RNN cannot skip)."""
    h = np.zeros((len(x), D_H))  # (n, d_h)
    prev = np.zeros(D_H)  # (d_h,) h_0
    for t in range(len(x)):
        prev = np.tanh(w.w_h @ prev + w.w_x @ x[t])  # (d_h,)
        h[t] = prev
    return h


def jacobians_wrt_first(h: np.ndarray, w: Weights) -> np.ndarray:
    """∂h_t/∂x_1 for t = 1 … n by the chain rule: J_1 = D_1·W_x, J_t = D_t·W_h·J_{t−1}, D_t = diag(1 − h_t²)."""
    out = np.zeros((len(h), D_H, D_X))  # (n, d_h, d_x)
    jac = (1 - h[0] ** 2)[:, None] * w.w_x  # (d_h, d_x): tanh′ = 1 − tanh², at step 1
    out[0] = jac
    for t in range(1, len(h)):
        jac = (1 - h[t] ** 2)[:, None] * (w.w_h @ jac)  # (d_h, d_x)
        out[t] = jac
    return out


def run(words: list[str] | tuple[str, ...] = DEFAULT_WORDS) -> Rnn:
    """The RNN and attention over `words`, every stage by name (see the module docstring)."""
    words = list(words)
    if not words:
        raise ValueError("words must not be empty")
    w = weights()
    x = word_vectors(words, D_X)  # (n, d_x)
    h = hidden_states(x, w)  # (n, d_h)
    jac = jacobians_wrt_first(h, w)  # (n, d_h, d_x)
    influence = np.linalg.norm(jac, ord=2, axis=(1, 2))  # (n,) largest singular value of each
    att = attention(x @ w.w_q, x @ w.w_k, x @ w.w_v)  # every stage (n, n); q, k, v (n, d_x)
    return Rnn(words, x, h, jac, influence, att.weights, len(words), 1, w)
