"""Switching heads off (ablation) and every layer's guess (the logit lens), through the families'
one layer and app.model.forward.run — no copy of either.

References:
  Michel, Levy & Neubig, "Are Sixteen Heads Really Better than One?" (2019): a head is switched off
  by multiplying its output by 0 before the output projection — transformers' BERT head_mask; for
  Llama the same is a forward pre-hook on o_proj that zeroes the head's d input columns.
  nostalgebraist, "interpreting GPT: the logit lens" (2020): each layer's residual stream put
  through the final normalisation and the (tied) unembedding, as if the model stopped there.

Switching off is the families' Hooks(heads=…): each layer hands its heads' outputs (h, rows, d) to
the hook before W_O / o_proj, and switch_off() zeroes the chosen ones. A switched-off head of layer
l changes nothing below l, so rerun() continues the sentence's trace from layer l (its input hidden
state and its q, k, v, kept by the trace) with the hook on: switching off a head of a late layer
costs a few layers, not a forward.

The lens reads, at one position, the embedding and every layer's output: run() with last_only (the
prompt cut after that position: a causal model's later rows change nothing before them) keeps each
layer's row there (its `kept`), and the decoder's logits() puts the L + 1 rows through the final
RMSNorm and the LM head at once.

Shapes: hidden (n, C) per layer; heads' outputs (h, rows, d); logits (V,); probabilities in float64.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from app.attention import Backend
from app.model import forward
from app.model.families.base import Decoder, Hooks
from app.model.families.llama.config import EMBED, LM_HEAD
from app.model.generate import new_cache, probabilities, top_ids
from app.model.loader import Model
from app.model.trace import Trace

Head = tuple[int, int]  # (layer, head), both 0-based


def switch_off(heads: Iterable[Head]) -> Hooks:
    """The hooks that zero the outputs of `heads` before each layer's output projection:
    (layer i, its heads' outputs (h, rows, d)) → the same with those heads' rows set to 0."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in sorted(set(heads)):
        by_layer.setdefault(layer, []).append(head)

    def zero(i: int, a: Any) -> Any:
        off = by_layer.get(i)
        if off:
            a[off] = 0  # attention's fresh output, read by W_O only: zeroed in place, as head_mask's × 0 would
        return a

    return Hooks(heads=zero)


def rerun(model: Model, ids: list[int], trace: Trace, heads: Iterable[Head], backend: Backend = "numpy") -> Trace:
    """The trace with `heads` switched off: layers below the first of them are `trace`'s own (hidden
    states, q, k, v); from that layer on forward.trace runs again, continuing them, with the hook on."""
    heads = sorted(set(heads))
    if not heads:
        return trace
    first = heads[0][0]
    start = Trace(trace.q[: first + 1], trace.k[: first + 1], trace.v[: first + 1], trace.hidden[: first + 1])
    return forward.trace(ids, model.weights, model.spec, backend, None, start, hooks=switch_off(heads))


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row by row cos(a_i, b_i) of two (n, C) arrays, in float64 (1: the same direction)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    num = np.einsum("ij,ij->i", a, b)
    out: np.ndarray = num / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return out


def unembed(model: Model, normed: np.ndarray) -> np.ndarray:
    """The next-token scores (V,) float32 of a decoder's last row already through the final RMSNorm
    (a trace keeps its last layer so, as transformers' hidden_states): normed · Eᵀ, or lm_head's."""
    head = model.weights[EMBED if model.spec.tied else LM_HEAD]  # (V, C)
    return np.asarray(head @ normed, dtype=np.float32)


def top(model: Model, logits: np.ndarray, k: int) -> list[dict[str, Any]]:
    """The k likeliest tokens of logits (V,): [{"token", "id", "p"}], p = softmax in float64."""
    p = probabilities(logits)
    return [{"token": model.tokenizer.piece(int(i)), "id": int(i), "p": float(p[i])} for i in top_ids(logits, k)]


def lens_scores(model: Model, ids: list[int], position: int, backend: Backend = "numpy") -> np.ndarray:
    """Every layer's next-token scores at `position` (L + 1, V) float32, the embedding's first: the
    prompt up to `position` through run() (last_only: the last layer's other rows are never read),
    keeping each layer's row at `position`; the rows through the decoder's final RMSNorm and LM head."""
    s = model.spec
    layer, o = forward.layer_of(model.weights, s, backend)
    assert hasattr(layer, "logits"), f"the lens reads a decoder's next-token scores: {s.name} is {s.kind}"
    decoder: Decoder = layer  # type: ignore[assignment]
    ids = ids[: position + 1]
    x = decoder.embed(ids, 0)  # (n, C)
    rows = [np.array(o.numpy(x[-1:]))]  # (1, C) each: copies (the run replaces its blocks' arrays)

    def kept(i: int, xs: list[Any]) -> None:
        rows.append(np.array(o.numpy(xs[-1][-1:])))

    last = forward.run(decoder, o, x, 0, 0, s.layers, new_cache(model, len(ids), backend), last_only=True, kept=kept)
    rows.append(np.array(o.numpy(last[-1][-1:])))  # layer L − 1's output, before the final norm
    return np.asarray(o.numpy(decoder.logits(o.array(np.concatenate(rows)))), dtype=np.float32)  # (L + 1, V)


def lens(model: Model, ids: list[int], position: int, k: int, backend: Backend = "numpy") -> list[list[dict[str, Any]]]:
    """Each layer's guess at `position`: the embedding and every layer's output put through the final
    RMSNorm and the LM head, the top k of each (layers + 1 lists, the embedding's first)."""
    return [top(model, row, k) for row in lens_scores(model, ids, position, backend)]
