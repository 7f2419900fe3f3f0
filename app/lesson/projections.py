"""Where q, k and v come from: three learned matrices applied to each token's embedding.

References:
  Vaswani et al., "Attention Is All You Need" (2017), section 3.2.2: a head's inputs are
      Q W^Q, K W^K, V W^V with learned W^Q, W^K ∈ ℝ^{d_model×d_k}, W^V ∈ ℝ^{d_model×d_v}.
  The lesson's "SELECT * FROM customers" example (q = x·W_Q, k = x·W_K, v = x·W_V): NumPy's random
      seed 42, then X, W_Q, W_K, W_V drawn in that order. app.examples rebuilds those numbers
      (select_from_customers_inputs); this module reads them there.

Stages, by name (n = 4 tokens, d_model = d_k = d_v = 8):

  x      each token's embedding, one row per token          (n, d_model)
  w_q    the query projection                               (d_model, d_k)
  w_k    the key projection                                 (d_model, d_k)
  w_v    the value projection                               (d_model, d_v)
  q      x·W_Q: what each token looks for                   (n, d_k)
  k      x·W_K: what each token offers                      (n, d_k)
  v      x·W_V: what each token passes on                   (n, d_v)

Row i of q is x_i·W_Q: entry j is Σ_m x[i, m]·W_Q[m, j], the same for k and v.
This module imports nothing from the web side of the app.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.examples import EXAMPLES, select_from_customers_inputs

EXAMPLE_ID = "select-from-customers"


@dataclass(frozen=True)
class Projections:
    tokens: list[str]
    x: np.ndarray  # (n, d_model)
    w_q: np.ndarray  # (d_model, d_k)
    w_k: np.ndarray  # (d_model, d_k)
    w_v: np.ndarray  # (d_model, d_v)
    q: np.ndarray  # (n, d_k)
    k: np.ndarray  # (n, d_k)
    v: np.ndarray  # (n, d_v)


def project() -> Projections:
    """The "SELECT * FROM customers" example: its embeddings, its three matrices and their products, by name."""
    x, w_q, w_k, w_v = select_from_customers_inputs()  # (n, d_model), then (d_model, d) each
    tokens = list(EXAMPLES[EXAMPLE_ID].tokens)
    return Projections(tokens, x, w_q, w_k, w_v, q=x @ w_q, k=x @ w_k, v=x @ w_v)  # (n, d) each
