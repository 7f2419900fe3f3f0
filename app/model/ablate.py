"""Switching heads off (ablation) and every layer's guess (the logit lens), on a sentence's trace.

References:
  Michel, Levy & Neubig, "Are Sixteen Heads Really Better than One?" (2019): a head is switched off
  by multiplying its output by 0 before the output projection — transformers' BERT head_mask; for
  Llama the same is a forward pre-hook on o_proj that zeroes the head's d input columns.
  nostalgebraist, "interpreting GPT: the logit lens" (2020): each layer's residual stream put
  through the final normalisation and the (tied) unembedding, as if the model stopped there.

A switched-off head of layer l changes nothing below l: its rerun starts from the trace's hidden
state after layer l − 1 and layer l's q, k, v (rerun), so switching off a head of a late layer costs
a few layers, not a forward. The rest of the forward runs as usual (app.model.forward with a heads
hook: the one layer function of each family, zeroing heads before W_O).

Shapes: hidden (n, C) per layer; heads' outputs (h, rows, d); logits (V,); probabilities in float64.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from app.attention import Backend
from app.model import llama
from app.model.generate import probabilities, top_ids
from app.model.loader import Model
from app.model.nn import ops
from app.model.trace import Trace

Head = tuple[int, int]  # (layer, head), both 0-based


def switch_off(heads: Iterable[Head]) -> Callable[[int, Any], Any]:
    """The hook that zeroes the outputs of `heads` before each layer's output projection:
    (layer i, its heads' outputs (h, rows, d)) → the same with those heads' rows set to 0."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in sorted(set(heads)):
        by_layer.setdefault(layer, []).append(head)

    def hook(i: int, a: Any) -> Any:
        off = by_layer.get(i)
        if off:
            a[off] = 0  # a is attention's fresh output: zeroed in place, as head_mask's product by 0 would
        return a

    return hook


def rerun(model: Model, ids: list[int], trace: Trace, heads: Iterable[Head], backend: Backend = "numpy") -> Trace:
    """The trace with `heads` switched off: layers below the first of them are `trace`'s own (hidden
    states, q, k, v); from that layer on the forward runs again with the heads' outputs zeroed."""
    heads = sorted(set(heads))
    if not heads:
        return trace
    first = heads[0][0]
    start = Trace(trace.q[: first + 1], trace.k[: first + 1], trace.v[: first + 1], trace.hidden[: first + 1])
    return model.forward(ids, backend, None, start, heads=switch_off(heads))


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row by row cos(a_i, b_i) of two (n, C) arrays, in float64 (1: the same direction)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    num = np.einsum("ij,ij->i", a, b)
    out: np.ndarray = num / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return out


def next_token_logits(model: Model, final: np.ndarray) -> np.ndarray:
    """The next-token scores (V,) float32 of a decoder's final-normed last row (the trace's last hidden
    state is after the final RMSNorm): x·Eᵀ, or lm_head's."""
    o = ops("numpy")
    return np.asarray(llama.logits(final[None, :], o.weights(model.weights), model.spec, o)[0], dtype=np.float32)


def top(model: Model, logits: np.ndarray, k: int) -> list[dict[str, Any]]:
    """The k likeliest tokens of logits (V,): [{"token", "id", "p"}], p = softmax in float64."""
    p = probabilities(logits)
    return [{"token": model.tokenizer.piece(int(i)), "id": int(i), "p": float(p[i])} for i in top_ids(logits, k)]


def lens(model: Model, trace: Trace, position: int, k: int) -> list[list[dict[str, Any]]]:
    """Each layer's guess at `position`: the embedding and every layer's output put through the final
    RMSNorm and the LM head, the top k of each (layers + 1 lists, the embedding's first). The trace's
    last hidden state is already final-normed (as transformers' hidden_states): it is not normed twice."""
    s = model.spec
    o = ops("numpy")
    w = o.weights(model.weights)
    rows = np.stack([h[position] for h in trace.hidden[:-1]])  # (L, C): the embedding, layers 0 … L − 2
    normed = np.concatenate([llama.final_norm(rows, w, s), trace.hidden[-1][position][None, :]])  # (L + 1, C)
    scores = np.asarray(llama.logits(normed, w, s, o), dtype=np.float32)  # (L + 1, V)
    return [top(model, row, k) for row in scores]
