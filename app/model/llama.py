"""The Llama decoder's forward pass (SmolLM2-135M by default), one function per block, in NumPy or torch.

References:
  Touvron et al., "LLaMA: Open and Efficient Foundation Language Models" (2023): pre-RMSNorm blocks,
  SwiGLU feed-forward, rotary positions.
  Zhang & Sennrich, "Root Mean Square Layer Normalization" (2019): RMSNorm(x) = x / √(mean(x²) + ε) · g.
  Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding" (2021): each pair of
  a query's (and key's) numbers turned by an angle position · θ^(−2i/d), so q·k depends on the distance.
  Ainslie et al., "GQA: Training Generalized Multi-Query Transformer Models" (2023): h query heads
  share h_kv key/value heads, query head i reading KV head i // (h / h_kv).
  Shazeer, "GLU Variants Improve Transformer" (2020): SwiGLU(x) = (SiLU(x·W_gate) ⊙ x·W_up)·W_down.
  transformers/models/llama/modeling_llama.py (LlamaRMSNorm, LlamaRotaryEmbedding, rotate_half,
  LlamaAttention, LlamaMLP): the weight names below are its names (after "model."), and the
  rotation pairs number i with number i + d/2 of a head, as its rotate_half does.

Pre-RMSNorm blocks:  x = x + Attn(RMSNorm₁(x));  x = x + SwiGLU(RMSNorm₂(x));  final RMSNorm; logits =
x·Eᵀ with the embedding matrix E (tied) or lm_head's own. Causal by nature. The trace keeps each
layer's q after RoPE (h, n, d) and k after RoPE and v (h_kv, n, d): the KV heads themselves, which
app.model.select hands to each query head of their group. Once a layer's q, k, v are known the
rest is row by row, so blocks of rows run on the CPU's cores (nn.rows), as in bert.py.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from app.model import llama_config
from app.model.forward import Parts, forward_of
from app.model.llama_weights import JOINED, split
from app.model.nn import NumpyOps, parallel
from app.model.spec import ModelSpec
from app.model.weights import Weights

W = Mapping[str, Any]  # the weights as the backend holds them (NumPy arrays or torch tensors)
LAYER = "layers.{}."


def required(s: ModelSpec) -> tuple[str, ...]:
    return tuple(llama_config.shapes(s.layers, s.heads, s.kv_heads, s.hidden, s.intermediate, s.vocab, s.tied))


# ---- the blocks ------------------------------------------------------------------------------


def _is_torch(x: Any) -> bool:
    return not isinstance(x, np.ndarray)


def rms_norm(x: Any, weight: Any, eps: float) -> Any:
    """x / √(mean(x²) + ε) · g, row by row (float32, as LlamaRMSNorm)."""
    if _is_torch(x):
        return weight * (x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt())
    ms = np.einsum("ij,ij->i", x, x)[:, None] / np.float32(x.shape[-1])  # (n, 1) mean of squares
    return weight * (x * (1 / np.sqrt(ms + np.float32(eps))))  # (n, C)


def silu(x: np.ndarray) -> np.ndarray:
    """x·σ(x) = x / (1 + e^(−x)), in place on a scratch copy."""
    y: np.ndarray = np.negative(x)
    np.exp(y, out=y)
    y += 1.0
    np.divide(x, y, out=y)
    return y


_rope_lock = threading.Lock()
_rope_tables: dict[tuple[float, int], tuple[np.ndarray, np.ndarray]] = {}


def rope_table(theta: float, d: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of position · θ^(−2i/d) for positions 0 … n − 1 and i < d/2: 2 × (n, d/2), float32.

    The angles are made in float32 as LlamaRotaryEmbedding makes them (inv_freq, then position ×
    inv_freq), their cosine and sine rounded once to float32. Grown and kept per (θ, d).
    """
    with _rope_lock:
        have = _rope_tables.get((theta, d))
        if have is None or have[0].shape[0] < n:
            size = max(n, 256 if have is None else 2 * have[0].shape[0])
            inv_freq = (1.0 / np.float32(theta) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d))).astype(
                np.float32
            )  # (d/2,)
            angles = np.arange(size, dtype=np.float32)[:, None] * inv_freq  # (size, d/2), float32 products
            have = (
                np.cos(angles.astype(np.float64)).astype(np.float32),
                np.sin(angles.astype(np.float64)).astype(np.float32),
            )
            _rope_tables[(theta, d)] = have
        return have[0][:n], have[1][:n]


def rope(x: Any, heads: int, positions: slice, theta: float, o: NumpyOps) -> Any:
    """(n, heads·d) projections → (heads, n, d), each head's pairs (i, i + d/2) turned by its position's angles."""
    n, width = x.shape
    d = width // heads
    cos, sin = rope_table(theta, d, positions.stop)
    c, s = cos[positions][:, None, :], sin[positions][:, None, :]  # (n, 1, d/2)
    h = x.reshape(n, heads, d)  # (n, heads, d)
    if _is_torch(x):
        c, s = o.array(np.ascontiguousarray(c)), o.array(np.ascontiguousarray(s))
        x1, x2 = h[..., : d // 2], h[..., d // 2 :]
        return o.torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).transpose(0, 1).contiguous()  # type: ignore[attr-defined]
    out = np.empty((heads, n, d), dtype=np.float32)  # (heads, n, d)
    x1, x2 = h[..., : d // 2].transpose(1, 0, 2), h[..., d // 2 :].transpose(1, 0, 2)  # (heads, n, d/2)
    ct, st = c.transpose(1, 0, 2), s.transpose(1, 0, 2)  # (1, n, d/2)
    np.subtract(x1 * ct, x2 * st, out=out[..., : d // 2])
    np.add(x2 * ct, x1 * st, out=out[..., d // 2 :])
    return out


def linear(x: Any, w: W, name: str) -> Any:
    """x·Wᵀ with W stored (out, in), as torch.nn.Linear without a bias."""
    return x @ w[name + ".weight"].T  # (n, out)


def wide_linear(x: Any, w: W, name: str, o: NumpyOps) -> Any:
    """linear() for a few rows (a token being written): the weight's rows split over the cores, since
    one token's work is reading the weights, and one core cannot read them as fast as two."""
    weight = w[name + ".weight"]  # (out, in)
    if o.name != "numpy" or x.shape[0] > 8:
        return x @ weight.T
    parts = _column_parts(weight.shape[0])
    if len(parts) == 1:
        return x @ weight.T
    return np.concatenate(parallel(lambda r: x @ weight[r].T, parts), axis=-1)  # (n, out)


def _column_parts(out: int) -> list[slice]:
    from app.model.nn import WORKERS

    if WORKERS == 1 or out < 256:
        return [slice(0, out)]
    size = math.ceil(out / WORKERS / 64) * 64
    return [slice(i, min(i + size, out)) for i in range(0, out, size)]


_fuse_lock = threading.Lock()


def fuse(weights: Weights, spec: ModelSpec) -> None:
    """Once per model: each layer's q, k, v projections as one (h·d + 2·h_kv·d, C) matrix and its gate
    and up projections as one (2F, C), the separate names kept as row views of them (no extra
    memory): one matrix product where there were three (two), the same numbers. Weights loaded
    from the cache (unstacked) are joined already."""
    done = LAYER.format(spec.layers - 1) + "mlp.gate_up_proj.weight"
    if done in weights:
        return
    with _fuse_lock:
        if done in weights:
            return
        for i in range(spec.layers):
            p = LAYER.format(i)
            for joined, parts in JOINED.items():
                big = np.concatenate([weights[p + n] for n in parts])  # (Σ rows, C)
                big.flags.writeable = False
                split(weights, p, joined, big, spec)  # the separate copies can go
                weights[p + joined] = big  # the last layer's last: its presence says every layer is done


def qkv(x: Any, w: W, i: int, spec: ModelSpec, o: NumpyOps, first: int = 0, lin: Any = None) -> list[Any]:
    """Layer i's q (h, n, d), k and v (h_kv, n, d) for input rows at positions first … first + n − 1;
    q and k turned by RoPE. The three projections are one product with the fused matrix (fuse)."""
    p = LAYER.format(i)
    lin = lin or (lambda a, name: linear(a, w, name))
    hq, hkv = spec.heads * spec.head_size, spec.kv_heads * spec.head_size

    def rows(r: slice) -> Any:
        h = rms_norm(x[r], w[p + "input_layernorm.weight"], spec.eps)  # (rows, C)
        return lin(h, p + "self_attn.qkv_proj")  # (rows, h·d + 2·h_kv·d)

    one = o.name != "numpy" or x.shape[0] == 1
    both = rows(slice(0, x.shape[0])) if one else by_blocks(rows, x.shape[0], o)  # (n, ·)
    q, k, v = both[:, :hq], both[:, hq : hq + hkv], both[:, hq + hkv :]  # (n, h·d), 2 × (n, h_kv·d)
    pos = slice(first, first + x.shape[0])
    return [rope(q, spec.heads, pos, spec.rope_theta, o), rope(k, spec.kv_heads, pos, spec.rope_theta, o),
            o.split_heads(v, spec.kv_heads)]  # fmt: skip


def last_query_qkv(x: Any, w: W, i: int, spec: ModelSpec, o: NumpyOps, first: int = 0) -> list[Any]:
    """qkv() when only the last row's query is read (writing's prefill, at the last layer): every
    row's k and v (h_kv, n, d) for the cache, the query of the last row only (h, 1, d)."""
    p = LAYER.format(i)
    hq, hkv, n = spec.heads * spec.head_size, spec.kv_heads * spec.head_size, x.shape[0]
    fused = w[p + "self_attn.qkv_proj.weight"]  # (h·d + 2·h_kv·d, C): q's rows, then k's, then v's

    def kv_rows(r: slice) -> Any:
        return rms_norm(x[r], w[p + "input_layernorm.weight"], spec.eps) @ fused[hq:].T  # (rows, 2·h_kv·d)

    kv = kv_rows(slice(0, n)) if o.name != "numpy" else by_blocks(kv_rows, n, o)  # (n, 2·h_kv·d)
    q = rms_norm(x[n - 1 :], w[p + "input_layernorm.weight"], spec.eps) @ fused[:hq].T  # (1, h·d)
    theta, pos = spec.rope_theta, slice(first, first + n)
    return [rope(q, spec.heads, slice(first + n - 1, first + n), theta, o),
            rope(kv[:, :hkv], spec.kv_heads, pos, theta, o), o.split_heads(kv[:, hkv:], spec.kv_heads)]  # fmt: skip


def _blocks(n: int) -> list[slice]:
    """One block of rows per worker (a short sentence: one block). Larger products than bert.py's
    blocks of ≤ 128 rows: with SmolLM2's wider matrices a 300-token forward measured ~25% quicker
    (bench.decoder), on one thread and on two."""
    from app.model.nn import PARALLEL_ROWS, WORKERS

    per = WORKERS if n >= PARALLEL_ROWS else 1
    size = math.ceil(n / per)
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def by_blocks(f: Any, n: int, o: NumpyOps) -> Any:
    """f(rows) for the _blocks of n rows, in parallel, joined along the first axis (n, ·)."""
    return _cat(o, o.parallel(f, _blocks(n)))


def _cat(o: NumpyOps, parts: list[Any]) -> Any:
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if o.name == "numpy" else o.torch.cat(parts)  # type: ignore[attr-defined]


def grouped_attend(q: Any, k: Any, v: Any, first: int, o: NumpyOps) -> Any:
    """softmax(q kᵀ/√d + causal mask) v with grouped heads: q (h, r, d) holds the queries at positions
    first … first + r − 1, k and v (h_kv, T, d) the keys and values of positions 0 … T − 1; query
    head i reads KV head i // (h / h_kv). Each head's output (h, r, d), float32."""
    h, r, d = q.shape
    kv, t = k.shape[0], k.shape[1]
    g = h // kv
    if o.name != "numpy":
        kk, vv = k.repeat_interleave(g, dim=0), v.repeat_interleave(g, dim=0)  # (h, T, d)
        mask = o.torch.ones(r, t, dtype=o.torch.bool, device=q.device).tril(first)  # type: ignore[attr-defined]
        return o.F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)  # type: ignore[attr-defined]
    qg = q.reshape(kv, g * r, d)  # (h_kv, g·r, d): a group's queries one after another
    s = qg @ np.swapaxes(k, -1, -2)  # (h_kv, g·r, T) scores
    s *= np.float32(1 / math.sqrt(d))
    if first + 1 < t:  # the first query (at position `first`) has later keys: those get −∞ (one add)
        later = np.arange(t)[None, :] > (first + np.arange(r))[:, None]  # (r, T)
        s4 = s.reshape(kv, g, r, t)
        s4 += np.where(later, np.float32(-np.inf), np.float32(0))
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)  # weights
    return (s @ v).reshape(h, r, d)  # (h, r, d)


CAUSAL_CHUNK = 64  # causal_attend's rows per chunk of queries (300 tokens: 5.5 → 3.7 ms a layer, one core)


def causal_attend(q: Any, k: Any, v: Any, first: int, o: NumpyOps) -> Any:
    """grouped_attend() without the keys the causal mask hides: the queries in chunks of CAUSAL_CHUNK
    rows, each chunk reading keys 0 … its last position only (~half the scores of a long prompt).

    The same weights and outputs up to float32 rounding (a softmax's sum over fewer zeros, a shorter
    product): writing's prefill uses it; the trace keeps grouped_attend, so views stay byte for byte."""
    r = q.shape[1]
    if o.name != "numpy" or r <= CAUSAL_CHUNK:
        return grouped_attend(q, k, v, first, o)
    out = np.empty((q.shape[0], r, v.shape[-1]), dtype=np.float32)  # (h, r, d)
    for a in range(0, r, CAUSAL_CHUNK):
        b = min(a + CAUSAL_CHUNK, r)
        out[:, a:b] = grouped_attend(q[:, a:b], k[:, : first + b], v[:, : first + b], first + a, o)
    return out


def rest_of_layer(x: Any, q: Any, k: Any, v: Any, w: W, i: int, spec: ModelSpec, o: NumpyOps, first: int,
                  r: slice, lin: Any = None, attend: Any = grouped_attend) -> Any:  # fmt: skip
    """Rows r of layer i's output: those queries' attention over every key (causal), the output
    projection and the residual, then SwiGLU on RMSNorm₂ and its residual (all row by row)."""
    p = LAYER.format(i)
    lin = lin or (lambda a, name: linear(a, w, name))
    a = attend(q[:, r], k, v, first + r.start, o)  # (h, rows, d)
    y = x[r] + lin(o.merge_heads(a), p + "self_attn.o_proj")  # (rows, C)
    h = rms_norm(y, w[p + "post_attention_layernorm.weight"], spec.eps)  # (rows, C)
    gate_up = lin(h, p + "mlp.gate_up_proj")  # (rows, 2F)
    gate, up = gate_up[:, : spec.intermediate], gate_up[:, spec.intermediate :]  # (rows, F) each
    act = o.F.silu(gate) if o.name != "numpy" else silu(gate)  # type: ignore[attr-defined]
    act *= up
    return y + lin(act, p + "mlp.down_proj")  # (rows, C)


def embed(ids: list[int], w: W) -> Any:
    return w["embed_tokens.weight"][ids]  # (n, C)


def final_norm(x: Any, w: W, spec: ModelSpec) -> Any:
    return rms_norm(x, w["norm.weight"], spec.eps)


def logits(x: Any, w: W, spec: ModelSpec, o: NumpyOps) -> Any:
    """The next-token logits of final-normed rows x (n, C): x·Eᵀ (tied) or lm_head (n, V)."""
    name = "embed_tokens" if spec.tied else "lm_head"
    return wide_linear(x, w, name, o)


def parts(w: W, spec: ModelSpec, o: NumpyOps) -> Parts:
    """Llama's parts of the forward pass (app.model.forward): pre-RMSNorm layers; the last hidden
    state is after the final RMSNorm once every layer has run (as transformers reports it)."""

    def rest(i: int, x: Any, q: Any, k: Any, v: Any) -> Any:
        if o.name != "numpy":
            return rest_of_layer(x, q, k, v, w, i, spec, o, 0, slice(0, x.shape[0]))
        return by_blocks(partial(rest_of_layer, x, q, k, v, w, i, spec, o, 0), x.shape[0], o)  # (n, C), by rows

    def shown(i: int, x: Any) -> Any:
        return final_norm(x, w, spec) if i == spec.layers - 1 else x  # (n, C)

    return Parts(lambda ids: embed(ids, w), lambda i, x: qkv(x, w, i, spec, o), rest, shown)


forward = forward_of(parts, prepare=fuse)
