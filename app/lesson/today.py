"""The numbers of the chapter "Attention in today's models" (RoPE, grouped-query attention, the
attention sink), from one sentence through a Llama-family decoder.

References:
  Su et al., "RoFormer" (2021), §3.4.2: with R(θ·m) the rotation of position m, (R_m q)·(R_n k) =
  q·R_(n−m) k — the score depends on the distance n − m only.
  Ainslie et al., "GQA" (2023): h query heads share h_kv key/value heads.
  Xiao et al., "Efficient Streaming Language Models with Attention Sinks" (2024): most heads put a
  large weight on the first token whatever it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from app.attention import attention
from app.errors import InputError
from app.model import registry
from app.model.loader import Model, ModelHandle
from app.model.select import layer_heads
from app.model.trace import Trace

MAX_TOKENS = 64  # tokens of the chapter's sentence (its tables are n × n)
SHIFTS = 8  # places the same pair of tokens is moved to, keeping its distance
DISTANCES = 16  # distances the same query and key are put at


def rotate(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """Vectors x (n, d) turned as RoPE turns them at `positions` (n,): pair (i, i + d/2) by position ·
    θ^(−2i/d), in float64. A negative position turns them back."""
    d = x.shape[-1]
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (d/2,)
    angles = positions[:, None].astype(np.float64) * inv  # (n, d/2)
    c, s = np.cos(angles), np.sin(angles)
    x1, x2 = x[:, : d // 2], x[:, d // 2 :]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)  # (n, d)


@dataclass(frozen=True)
class Today:
    tokens: list[str]
    layer: int
    head: int
    kv_head: int
    groups: list[list[int]]  # query heads of each KV head
    sink_by_layer: list[float]  # mean weight on token 0 over heads and queries 1 … n−1, per layer
    sink: float  # the mean of those
    head_weights: np.ndarray  # (n, n) the chosen head's weights
    q_pair: np.ndarray  # (n, 2) the chosen head's first rotary pair of q, per position (after RoPE)
    q_pair_before: np.ndarray  # (n, 2) the same pair before RoPE
    angle_step: float  # radians per position of that pair (θ^0 = 1)
    shift_scores: list[float]  # q·k of the last query and first key moved together by 0 … SHIFTS−1
    distance_scores: list[float]  # q·k of the same two vectors put 0 … DISTANCES−1 apart
    cache_bytes_per_token: int  # with the model's KV heads
    cache_bytes_per_token_mha: int  # if every query head had its own


def today(model: Model, trace: Trace, tokens: list[str], layer: int, head: int) -> Today:
    """The chapter's numbers from the decoder's trace of a sentence (every layer) and its tokens."""
    s = model.spec
    n = len(tokens)
    sink = []
    for i in range(s.layers):
        w = attention(*layer_heads(trace, i), "causal").weights  # (h, n, n)
        sink.append(float(w[:, 1:, 0].mean()) if n > 1 else 1.0)
    q, k, _ = layer_heads(trace, layer)
    weights = attention(q[head], k[head], k[head], "causal").weights  # (n, n)
    positions = np.arange(n)
    q_before = rotate(q[head].astype(np.float64), -positions, s.rope_theta)  # RoPE undone: (n, d)
    k_before = rotate(k[head].astype(np.float64), -positions, s.rope_theta)
    d = s.head_size
    a, b = q_before[-1:], k_before[:1]  # the last token's query, the first token's key

    def score(m: int, p: int) -> float:
        return float((rotate(a, np.array([m]), s.rope_theta) @ rotate(b, np.array([p]), s.rope_theta).T)[0, 0])

    gap = n - 1
    per_token = s.layers * 2 * s.head_size * 4
    return Today(
        tokens, layer, head, head // s.groups,
        [list(range(j * s.groups, (j + 1) * s.groups)) for j in range(s.kv_heads)],
        sink, float(np.mean(sink)), weights,
        np.stack([q[head][:, 0], q[head][:, d // 2]], axis=-1).astype(np.float64),
        np.stack([q_before[:, 0], q_before[:, d // 2]], axis=-1),
        1.0,
        [score(gap + t, t) for t in range(SHIFTS)],
        [score(t, 0) for t in range(DISTANCES)],
        per_token * s.kv_heads, per_token * s.heads,
    )  # fmt: skip


def as_json(t: Today) -> dict[str, Any]:
    return {
        "tokens": t.tokens, "layer": t.layer, "head": t.head, "kv_head": t.kv_head, "groups": t.groups,
        "sink_by_layer": t.sink_by_layer, "sink": t.sink, "weights": t.head_weights,
        "q_pair": t.q_pair, "q_pair_before": t.q_pair_before, "angle_step": t.angle_step,
        "shift_scores": t.shift_scores, "distance_scores": t.distance_scores,
        "cache_bytes_per_token": t.cache_bytes_per_token, "cache_bytes_per_token_mha": t.cache_bytes_per_token_mha,
    }  # fmt: skip


def for_sentence(handle: ModelHandle, sentence: str, layer: int, head: int) -> Today:
    """The chapter's numbers for a typed sentence, or an InputError naming the field (a 422 on the web).
    The trace comes through the handle's cache: a class whose phones all open the chapter on the same
    sentence runs the decoder once, not once a phone (and every layer and head of it answers from there)."""
    model = handle.model()
    s = model.spec
    if s.kind != "llama":
        raise InputError("model", f"{s.name} is not a Llama-family decoder: use {registry.DECODER_ID!r}")
    if layer >= s.layers:
        raise InputError("layer", f"layer must be 0 … {s.layers - 1} ({s.name} has {s.layers} layers)")
    if head >= s.heads:
        raise InputError("head", f"head must be 0 … {s.heads - 1} ({s.name} has {s.heads} query heads)")
    if not sentence.strip():
        raise InputError("sentence", "sentence is empty: type at least one word")
    enc = handle.encode(sentence)
    if not 2 <= len(enc) <= MAX_TOKENS:
        raise InputError("sentence", f"sentence is {len(enc)} tokens; this chapter takes 2 … {MAX_TOKENS}")
    return today(model, handle.trace(sentence, enc, "numpy"), enc.tokens, layer, head)
