"""The BERT encoder's layer, in NumPy (or torch through nn.ops).

References:
  Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers" (2019).
  transformers/models/bert/modeling_bert.py (BertEmbeddings, BertSelfAttention, BertLayer); dropout
  is off (inference). all-MiniLM-L6-v2: 6 layers, 12 heads of size 32, hidden 384, FFN 1536, exact
  (erf) GELU.

Post-LayerNorm layers:  x = LN(x + Attn(x));  x = LN(x + W₂·GELU(W₁·x))
Self-attention is softmax(q kᵀ/√d) v on the (h, n, d) per-head q, k, v with the "full" mask, in
float32 as transformers computes it (nn.attend); the trace keeps q, k, v, from which app.attention
recomputes every stage in float64 for the head a view shows.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from app.model import blas
from app.model.families.base import ModelSpec, W
from app.model.families.bert.config import (
    DOWN,
    EMB_NORM,
    KEY,
    LAYER,
    LINEARS,
    NORM1,
    NORM2,
    OUT,
    POSITIONS,
    QUERY,
    TYPES,
    UP,
    VALUE,
    WORDS,
)
from app.model.families.layernorm import LayerNormLayer
from app.model.weights import Weights

_layout_lock = threading.Lock()


def column_major(weights: Weights, spec: ModelSpec) -> None:
    """Once per model: each linear layer's W (out, in) stored column by column (Fortran order), so
    that Wᵀ in x·Wᵀ is an ordinary row-major (in, out) matrix. The same numbers, shape and memory;
    OpenBLAS multiplies the forward's blocks of 90–250 rows by it 15–35% faster than by the
    transpose of a row-major W (the whole forward: 0.83× as long). Costs one copy of the weights,
    ~50 ms, at the model's first forward."""
    last = LAYER.format(spec.layers - 1) + LINEARS[-1] + ".weight"
    if weights[last].flags.f_contiguous:
        return
    with _layout_lock:
        for i in range(spec.layers):
            for lin in LINEARS:
                name = LAYER.format(i) + lin + ".weight"
                if not weights[name].flags.f_contiguous:
                    a = np.asfortranarray(weights[name])  # (out, in), laid out as (in, out)
                    a.flags.writeable = False
                    weights[name] = a  # the last layer's last: its layout says every layer is done


def linear(x: Any, w: W, name: str) -> Any:
    """x·Wᵀ + b with W stored (out, in), as torch.nn.Linear (b added in place: one array less;
    MKL's product where installed)."""
    y = blas.matmul(x, w[name + ".weight"].T)  # (n, out)
    y += w[name + ".bias"]
    return y


class BertLayer(LayerNormLayer):
    """The encoder's layer for weights w on backend o (app.model.families.base.Layer);
    its LayerNorm, blocks of rows and kᵀ come from LayerNormLayer."""

    def embed(self, ids: list[int], first: int) -> Any:
        """Token + position + token-type (all 0: one sentence) embeddings, then LayerNorm."""
        w, n = self.w, len(ids)
        x = w[WORDS][ids] + w[POSITIONS][first : first + n] + w[TYPES][0]  # (n, C)
        return self._norm(x, EMB_NORM)  # (n, C)

    def project(self, i: int, x: Any, first: int, queries: slice | None = None) -> tuple[Any, Any, Any]:
        """The query, key and value projections of rows x, per head: 3 × (h, r, d)."""
        p, h = LAYER.format(i), self.spec.heads
        q, k, v = (self.o.split_heads(linear(x, self.w, p + name), h) for name in (QUERY, KEY, VALUE))
        return q, k, v

    def finish(self, i: int, x: Any, q: Any, keys: Any, first: int) -> Any:
        """Rows x's attention over every key, the output projection, residual + LayerNorm,
        feed-forward, residual + LayerNorm (all row by row)."""
        k, kt, v = keys
        p, w = LAYER.format(i), self.w
        a = self.o.attend(q, k, v, "full", first, kt)  # (h, rows, d): each head's output, float32
        if self.hooks.heads is not None:
            a = self.hooks.heads(i, a)
        y = self._norm(x + linear(self.o.merge_heads(a), w, p + OUT), p + NORM1)  # (rows, C)
        f = linear(self.act(linear(y, w, p + UP)), w, p + DOWN)  # (rows, C)
        return self._norm(y + f, p + NORM2)  # (rows, C)

    def shown(self, i: int, x: Any) -> Any:
        return x
