"""The BERT encoder's forward pass, one function per block (NumPy, or torch through nn.ops).

References:
  Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers" (2019).
  transformers/models/bert/modeling_bert.py (BertEmbeddings, BertSelfAttention, BertLayer):
  the weight names below are its names; dropout is off (inference).
  all-MiniLM-L6-v2: 6 layers, 12 heads of size 32, hidden 384, FFN 1536, exact (erf) GELU.

Post-LayerNorm blocks:  x = LN(x + Attn(x));  x = LN(x + W₂·GELU(W₁·x))
Once a layer's q, k, v are known, everything else is row by row (a query's attention needs every
key and value, but no other query), so blocks of rows run on the CPU's cores (nn.rows).
Self-attention is softmax(q kᵀ/√d) v on the (h, n, d) per-head q, k, v with the "full" mask, in
float32 as transformers computes it (nn.attend); the trace keeps q, k, v, from which
app.attention recomputes every stage in float64 for the head a view shows.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from app.model.forward import Parts, forward_of
from app.model.nn import NumpyOps
from app.model.spec import ModelSpec
from app.model.weights import Weights

EMB = "embeddings."
W = Mapping[str, Any]  # the weights as the backend holds them (NumPy arrays or torch tensors)
LINEARS = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
           "intermediate.dense", "output.dense")  # fmt: skip


def required(spec: ModelSpec) -> tuple[str, ...]:
    names = [EMB + n for n in ("word_embeddings.weight", "position_embeddings.weight", "token_type_embeddings.weight")]
    for i in range(spec.layers):
        p = f"encoder.layer.{i}."
        for lin in LINEARS:
            names += [p + lin + ".weight", p + lin + ".bias"]
        names += [p + "attention.output.LayerNorm.weight", p + "output.LayerNorm.weight"]
    return tuple(names)


_layout_lock = threading.Lock()


def column_major(weights: Weights, spec: ModelSpec) -> None:
    """Once per model: each linear layer's W (out, in) stored column by column (Fortran order), so
    that Wᵀ in x·Wᵀ is an ordinary row-major (in, out) matrix. The same numbers, shape and memory;
    OpenBLAS multiplies the forward's blocks of 90–250 rows by it 15–35% faster than by the
    transpose of a row-major W (the whole forward: 0.83× as long). Costs one copy of the weights,
    ~50 ms, at the model's first forward."""
    last = f"encoder.layer.{spec.layers - 1}.{LINEARS[-1]}.weight"
    if weights[last].flags.f_contiguous:
        return
    with _layout_lock:
        for i in range(spec.layers):
            for lin in LINEARS:
                name = f"encoder.layer.{i}.{lin}.weight"
                if not weights[name].flags.f_contiguous:
                    a = np.asfortranarray(weights[name])  # (out, in), laid out as (in, out)
                    a.flags.writeable = False
                    weights[name] = a  # the last layer's last: its layout says every layer is done


def linear(x: Any, w: W, name: str) -> Any:
    """x·Wᵀ + b with W stored (out, in), as torch.nn.Linear (b added in place: one array less)."""
    y = x @ w[name + ".weight"].T  # (n, out)
    y += w[name + ".bias"]
    return y


def norm(x: Any, w: W, name: str, spec: ModelSpec, o: NumpyOps) -> Any:
    return o.layer_norm(x, w[name + ".weight"], w[name + ".bias"], spec.eps)


def embed(ids: list[int], w: W, spec: ModelSpec, o: NumpyOps) -> Any:
    """Token + position + token-type (all 0: one sentence) embeddings, then LayerNorm."""
    n = len(ids)
    x = (
        w[EMB + "word_embeddings.weight"][ids]  # (n, C)
        + w[EMB + "position_embeddings.weight"][:n]  # (n, C)
        + w[EMB + "token_type_embeddings.weight"][0]  # (C,)
    )
    return norm(x, w, EMB + "LayerNorm", spec, o)  # (n, C)


def projections(x: Any, w: W, p: str, o: NumpyOps) -> list[Any]:
    """The query, key and value projections of layer prefix p: 3 × (n, C). The rows are split over
    the cores, each block of rows making all three of its projections in one piece of work
    (nn.rows_each): one hand-over to the other core a layer where a projection each made three,
    the same numbers in 0.93× the forward's time (345 tokens; three whole projections on two cores
    would leave one core idle a third of the time)."""
    return o.rows_each(lambda r: [linear(x[r], w, p + name) for name in LINEARS[:3]], x.shape[0])  # 3 × (n, C)


def qkv(x: Any, w: W, p: str, spec: ModelSpec, o: NumpyOps) -> list[Any]:
    """Per-head q, k, v of layer prefix p: 3 × (h, n, d)."""
    return [o.split_heads(y, spec.heads) for y in projections(x, w, p, o)]  # 3 × (h, n, d)


def rest_of_layer(x: Any, q: Any, k: Any, v: Any, kt: Any, w: W, p: str, spec: ModelSpec, o: NumpyOps, r: slice) -> Any:
    """Rows r of the layer's output: attention of those queries over every key, then the output
    projection, residual + LayerNorm, feed-forward, residual + LayerNorm (all row by row)."""
    a = o.attend(q[:, r], k, v, "full", r.start, kt)  # (h, rows, d): each head's output, float32
    a = linear(o.merge_heads(a), w, p + "attention.output.dense")  # (rows, C)
    y = norm(x[r] + a, w, p + "attention.output.LayerNorm", spec, o)  # (rows, C)
    act = o.activation(spec.activation)
    f = linear(act(linear(y, w, p + "intermediate.dense")), w, p + "output.dense")  # (rows, C)
    return norm(y + f, w, p + "output.LayerNorm", spec, o)  # (rows, C)


def parts(w: W, spec: ModelSpec, o: NumpyOps) -> Parts:
    """BERT's parts of the forward pass (app.model.forward): post-LN encoder layers, no final norm."""

    def rest(i: int, x: Any, q: Any, k: Any, v: Any) -> Any:
        kt = o.keys_across(k)  # once for all the blocks of rows
        f = partial(rest_of_layer, x, q, k, v, kt, w, f"encoder.layer.{i}.", spec, o)
        return o.rows(f, x.shape[0])  # (n, C), by blocks of rows

    return Parts(lambda ids: embed(ids, w, spec, o), lambda i, x: qkv(x, w, f"encoder.layer.{i}.", spec, o), rest)


forward = forward_of(parts, prepare=column_major)
