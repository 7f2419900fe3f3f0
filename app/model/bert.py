"""The BERT encoder's forward pass in NumPy, one function per block.

References:
  Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers" (2019).
  transformers/models/bert/modeling_bert.py (BertEmbeddings, BertSelfAttention, BertLayer):
  the weight names below are its names; dropout is off (inference).
  all-MiniLM-L6-v2: 6 layers, 12 heads of size 32, hidden 384, FFN 1536, exact (erf) GELU.

Post-LayerNorm blocks:  x = LN(x + Attn(x));  x = LN(x + W₂·GELU(W₁·x))
Self-attention is app.attention on the (h, n, d) per-head q, k, v with the "full" mask.
"""

from __future__ import annotations

import numpy as np

from app.attention import Backend
from app.model.nn import ACTIVATIONS, attend, by_rows, layer_norm, merge_heads, split_heads
from app.model.spec import ModelSpec
from app.model.trace import Trace
from app.model.weights import Weights

EMB = "embeddings."


def required(spec: ModelSpec) -> tuple[str, ...]:
    names = [EMB + n for n in ("word_embeddings.weight", "position_embeddings.weight", "token_type_embeddings.weight")]
    for i in range(spec.layers):
        p = f"encoder.layer.{i}."
        for lin in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                    "intermediate.dense", "output.dense"):  # fmt: skip
            names += [p + lin + ".weight", p + lin + ".bias"]
        names += [p + "attention.output.LayerNorm.weight", p + "output.LayerNorm.weight"]
    return tuple(names)


def linear(x: np.ndarray, w: Weights, name: str) -> np.ndarray:
    """x·Wᵀ + b with W stored (out, in), as torch.nn.Linear."""
    return x @ w[name + ".weight"].T + w[name + ".bias"]  # (n, out)


def norm(x: np.ndarray, w: Weights, name: str, spec: ModelSpec) -> np.ndarray:
    return layer_norm(x, w[name + ".weight"], w[name + ".bias"], spec.eps)


def embed(ids: list[int], w: Weights, spec: ModelSpec) -> np.ndarray:
    """Token + position + token-type (all 0: one sentence) embeddings, then LayerNorm."""
    n = len(ids)
    x = (
        w[EMB + "word_embeddings.weight"][ids]  # (n, C)
        + w[EMB + "position_embeddings.weight"][:n]  # (n, C)
        + w[EMB + "token_type_embeddings.weight"][0]  # (C,)
    )
    return norm(x, w, EMB + "LayerNorm", spec)  # (n, C)


def self_attention(
    x: np.ndarray, w: Weights, p: str, spec: ModelSpec, backend: Backend
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-head q, k, v of layer prefix p and the attention's output projection."""
    q = split_heads(linear(x, w, p + "attention.self.query"), spec.heads)  # (h, n, d)
    k = split_heads(linear(x, w, p + "attention.self.key"), spec.heads)  # (h, n, d)
    v = split_heads(linear(x, w, p + "attention.self.value"), spec.heads)  # (h, n, d)
    out = attend(q, k, v, "full", backend)  # (h, n, d): app.attention, a few heads at a time
    return q, k, v, linear(merge_heads(out), w, p + "attention.output.dense")  # (n, C)


def feed_forward(x: np.ndarray, w: Weights, p: str, spec: ModelSpec) -> np.ndarray:
    act = ACTIVATIONS[spec.activation]
    return by_rows(
        lambda rows: linear(act(linear(rows, w, p + "intermediate.dense")), w, p + "output.dense"), x
    )  # (n, C)


def forward(ids: list[int], w: Weights, spec: ModelSpec, backend: Backend = "numpy") -> Trace:
    x = embed(ids, w, spec)  # (n, C)
    qs, ks, vs, hidden = [], [], [], [x]
    for i in range(spec.layers):
        p = f"encoder.layer.{i}."
        q, k, v, a = self_attention(x, w, p, spec, backend)
        x = norm(x + a, w, p + "attention.output.LayerNorm", spec)  # (n, C)
        x = norm(x + feed_forward(x, w, p, spec), w, p + "output.LayerNorm", spec)  # (n, C)
        qs.append(q)
        ks.append(k)
        vs.append(v)
        hidden.append(x)
    return Trace(qs, ks, vs, hidden)
