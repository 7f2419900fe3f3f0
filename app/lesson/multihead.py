"""Multi-head attention: h heads side by side, their outputs concatenated, then × W_O.

References:
  Vaswani et al., "Attention Is All You Need" (2017), section 3.2.2:
      MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)
  transformers/models/bert/modeling_bert.py (BertSelfAttention, BertSelfOutput.dense): the same with
      biases, W stored (out, in); see app/model/families/bert/layer.py.
  The lesson's formula MultiHead(Q, K, V) = Concat(head_1, …, head_h) · W_O, filled with numbers here.

Stages, by name (h heads, n tokens, d_model wide rows, head sizes d_k and d_v):

  q, k, v      x · W_i^Q, x · W_i^K, x · W_i^V (+ bias)     (h, n, d_k), (h, n, d_k), (h, n, d_v)
  scores … output                                           every stage of app.attention, per head
  concat       [head_1 | … | head_h], head by head           (n, h·d_v)
  output       concat · W_O (+ bias)                         (n, d_model)

Each head goes through app.attention (the engine of the whole app), all heads in one call.
Arithmetic is float64. This module imports nothing from the web side of the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from app.attention import STAGES, Backend, Mask, attention

HEAD_STAGES = ("q", "k", "v", *STAGES)  # the fields of "heads", each with a leading head axis


@dataclass(frozen=True)
class MultiHead:
    heads: dict[str, np.ndarray]  # HEAD_STAGES → (h, n, ·) or (h, n, n)
    concat: np.ndarray  # (n, h·d_v)
    output: np.ndarray  # (n, d_model)


class ShapeError(ValueError):
    """Arrays that do not fit together; `field` names the request field to blame."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check_shapes(x: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, w_o: np.ndarray) -> None:
    """Raise ShapeError naming the first array that does not fit the others."""
    if x.ndim != 2:
        raise ShapeError("x", f"x must be n × d_model (2-D), got {x.ndim}-D")
    d_model = x.shape[1]
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        if w.ndim != 3:
            raise ShapeError(name, f"{name} must be h × d_model × d (3-D: one matrix per head), got {w.ndim}-D")
        if w.shape[1] != d_model:
            raise ShapeError(name, f"{name} has {w.shape[1]} rows per head; x's rows have d_model = {d_model}")
    if w_k.shape != w_q.shape:
        raise ShapeError("w_k", f"w_k must have the shape of w_q {list(w_q.shape)}, got {list(w_k.shape)}")
    if w_v.shape[0] != w_q.shape[0]:
        raise ShapeError("w_v", f"w_v has {w_v.shape[0]} heads but w_q has {w_q.shape[0]}")
    h, d_v = w_v.shape[0], w_v.shape[2]
    if w_o.ndim != 2 or w_o.shape != (h * d_v, d_model):
        raise ShapeError(
            "w_o",
            f"w_o must be (h·d_v) × d_model = {h * d_v} × {d_model} (h = {h}, d_v = {d_v}), got {list(w_o.shape)}",
        )


def multihead(
    x: np.ndarray,
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    w_o: np.ndarray,
    mask: Mask = "full",
    backend: Backend = "numpy",
    biases: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> MultiHead:
    """Every stage of Concat(head_1, …, head_h) · W_O. Weights are (in, out): x · W.

    biases, when given, are (b_q, b_k, b_v) of shape (h, d) each and b_o of shape (d_model,),
    as a trained model (BERT) adds them.
    """
    x, w_q, w_k, w_v, w_o = (np.asarray(a, dtype=np.float64) for a in (x, w_q, w_k, w_v, w_o))
    check_shapes(x, w_q, w_k, w_v, w_o)
    q = np.einsum("nc,hcd->hnd", x, w_q)  # (h, n, d_k)
    k = np.einsum("nc,hcd->hnd", x, w_k)  # (h, n, d_k)
    v = np.einsum("nc,hcd->hnd", x, w_v)  # (h, n, d_v)
    if biases is not None:
        b_q, b_k, b_v, _ = (np.asarray(b, dtype=np.float64) for b in biases)
        q, k, v = q + b_q[:, None, :], k + b_k[:, None, :], v + b_v[:, None, :]
    stages = attention(q, k, v, mask, backend)  # every stage with a leading head axis
    h, n, d_v = stages.output.shape
    concat = stages.output.transpose(1, 0, 2).reshape(n, h * d_v)  # (n, h·d_v): head 1's columns first
    output = concat @ w_o  # (n, d_model)
    if biases is not None:
        output = output + np.asarray(biases[3], dtype=np.float64)
    return MultiHead({"q": q, "k": k, "v": v, **stages.as_dict()}, concat, output)


def example(heads: int = 2, seed: int = 7) -> dict[str, Any]:
    """A small worked example for the lesson: 4 tokens, d_model = 4, heads of size 2, each head with
    its own W_Q, W_K and W_V, and one W_O (rounded to one decimal so the page can show every number).

    Each head keeps its weights whatever the number of heads: heads 1 and 2 come from the seeded
    generator after x (all their W_Q, then all their W_K, then all their W_V, then the 2-head W_O),
    heads 3 and 4 from generators of their own ([seed, head]). Adding heads adds matrices; it never
    redraws the ones a head already had. Only W_O, whose shape is (h·d_v) × d_model, differs per h.
    """
    if not 1 <= heads <= 4:
        raise ShapeError("heads", f"heads must be 1 … 4 for the worked example, got {heads}")
    rng = np.random.default_rng(seed)
    n, d_model, d, first = 4, 4, 2, 2
    x = np.round(rng.normal(size=(n, d_model)), 1)  # (n, d_model)
    w_q = np.round(rng.normal(size=(first, d_model, d)), 1)  # (2, d_model, d_k): heads 1 and 2
    w_k = np.round(rng.normal(size=(first, d_model, d)), 1)  # (2, d_model, d_k)
    w_v = np.round(rng.normal(size=(first, d_model, d)), 1)  # (2, d_model, d_v)
    w_o = np.round(rng.normal(size=(first * d, d_model)) / np.sqrt(first), 1)  # (2·d_v, d_model)
    extra = []  # heads 3 and 4: (W_Q, W_K, W_V) each, from the head's own generator
    for head in range(first + 1, 5):
        own = np.random.default_rng([seed, head])
        extra.append([np.round(own.normal(size=(d_model, d)), 1) for _ in "qkv"])  # (d_model, d) each
    if heads != first:  # W_O of this many heads, from a generator of its own
        w_o = np.round(np.random.default_rng([seed, 0, heads]).normal(size=(heads * d, d_model)) / np.sqrt(heads), 1)
    w_q = np.concatenate([w_q, np.array([e[0] for e in extra])])[:heads]  # (h, d_model, d_k)
    w_k = np.concatenate([w_k, np.array([e[1] for e in extra])])[:heads]  # (h, d_model, d_k)
    w_v = np.concatenate([w_v, np.array([e[2] for e in extra])])[:heads]  # (h, d_model, d_v)
    return {
        "tokens": ["the", "cat", "ate", "fish"],
        "x": x.tolist(),
        "w_q": w_q.tolist(),
        "w_k": w_k.tolist(),
        "w_v": w_v.tolist(),
        "w_o": w_o.tolist(),
        "mask": "full",
        "seed": seed,
    }
