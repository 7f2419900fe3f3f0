"""The Llama decoder's layer (SmolLM2-135M by default), in NumPy or torch: the one layer that the
views' trace, a prompt's prefill and each written token go through (app.model.forward.run).

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
  LlamaAttention, LlamaMLP): the rotation pairs number i with number i + d/2 of a head, as its
  rotate_half does.

One layer, as project() and finish():

    h = RMSNorm(x) · g₁                        (r, C)
    q, k, v = h·W_qkvᵀ                          W_qkv: W_Q, W_K, W_V joined (app.model.families.llama.weights)
    q, k = RoPE(q), RoPE(k)                     (h, r, d), (h_kv, r, d); k and v go to the keys and values
    ─── every row's k and v of the layer stored (the workers meet) ───
    a = attend(q, keys, values)                 softmax(q kᵀ/√d + causal mask) v, query head i on KV head i // g
                                                past LONG keys in blocks, online softmax (app.lesson.tiles)
    x = x + concat(a)·W_Oᵀ
    h = RMSNorm(x) · g₂
    x = x + (SiLU(h·W_gateᵀ) ⊙ h·W_upᵀ)·W_downᵀ

final RMSNorm; logits = x·Eᵀ with the embedding matrix E (tied) or lm_head's own. The work's
shape picks how the cores share it: a prompt's rows in one block per worker, each block through
every layer (blocks()); a few rows (a token being written) in one block, each weight's rows split
over the cores instead (one token's work is reading the weights, and one core cannot read them as
fast as two). Torch runs every row at once and threads its own kernels.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from app import limits
from app.lesson import tiles
from app.model import blas, nn
from app.model.families.base import NO_HOOKS, Hooks, ModelSpec, W
from app.model.families.llama.config import (
    ATTN_NORM,
    DOWN,
    EMBED,
    FINAL_NORM,
    GATE_UP,
    LAYER,
    LM_HEAD,
    MLP_NORM,
    OUT,
    QKV,
)
from app.model.nn import NumpyOps

WIDE_ROWS = 8  # at most this many rows: each product's weight rows split over the cores (a token being written)
# … and only a weight of at least this many floats (4 MiB). A few rows' product mostly waits on reading its
# weight; handing half of it to a helper costs ~50 µs (waking it on the other core), more than the second
# core saves on q, k, v's weight (2.2 MB) or the output's (1.3 MB). Split, the feed-forward's (10.6 MB) and
# the logits' (113 MB) are quicker: a written token took 38.2 ms with every weight split, 35.4 ms with
# these two only, 40 ms with the feed-forward's only (after a 5-token prompt, two cores, 7 Dec).
WIDE_FLOATS = 1 << 20
# one row's projections and feed-forward cost about as much as its query reading this many keys
# (measured on one core: ~0.15 ms a row of a layer's products, ~7e-5 ms a query's key in causal_attend)
ROW_COST = 2000
# … and as much as this many keys in blocked_attend (4,096 tokens, two workers, each one's CPU time over the
# 30 layers: 2.6e-3 s a row, 9.9e-7 s a query's key; with 2,000 the first worker did 6% more than the second)
LONG_ROW_COST = 2600
CAUSAL_CHUNK = 64  # causal_attend's rows per chunk of queries (300 tokens: 5.5 → 3.7 ms a layer, one core)
# Past LONG keys (a long prompt) attention reads the keys in blocks with an online softmax (blocked_attend)
LONG = limits.MAX_TOKENS
QUERY_TILE = 128  # NumPy: queries per tile; a KV head's block of scores is 3 heads × 128 × KEY_BLOCK floats (0.75 MB)
KEY_BLOCK = 512  # NumPy: keys per block (4,096 tokens, one core: 128 × 512 the quickest of 64 … 256 × 256 … 1,024)
TORCH_KEY_BLOCK = 1024  # torch: keys per block, every query at once (9 heads × n × 1,024 floats)
# _tile: l stays below BIG (and o below BIG times the largest |v|: far from float32's 3.4e38)
BIG = np.float32(1e30)


def _is_torch(x: Any) -> bool:
    return not isinstance(x, np.ndarray)


def rms_norm(x: Any, weight: Any, eps: float) -> Any:
    """x / √(mean(x²) + ε) · g, row by row (float32, as LlamaRMSNorm)."""
    if _is_torch(x):
        return weight * (x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt())
    ms = np.einsum("ij,ij->i", x, x) / np.float32(x.shape[-1])  # (n,) mean of squares
    y: np.ndarray = x * (1 / np.sqrt(ms + np.float32(eps)))[:, None]  # (n, C)
    y *= weight
    return y


_rope_lock = threading.Lock()
_rope_tables: dict[tuple[float, int], tuple[np.ndarray, np.ndarray]] = {}


def rope_table(theta: float, d: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of position · θ^(−2i/d) for positions 0 … n − 1 and i < d/2: 2 × (n, d/2), float32.

    The angles are made in float32 as LlamaRotaryEmbedding makes them (inv_freq, then position ×
    inv_freq), their cosine and sine rounded once to float32. Grown and kept per (θ, d).
    """
    have = _rope_tables.get((theta, d))
    if have is None or have[0].shape[0] < n:
        with _rope_lock:
            have = _rope_tables.get((theta, d))
            if have is None or have[0].shape[0] < n:
                size = max(n, 256 if have is None else 2 * have[0].shape[0])
                exponents = np.arange(0, d, 2, dtype=np.float32) / np.float32(d)
                inv_freq = (1.0 / np.float32(theta) ** exponents).astype(np.float32)  # (d/2,)
                angles = np.arange(size, dtype=np.float32)[:, None] * inv_freq  # (size, d/2), float32 products
                have = (np.cos(angles.astype(np.float64)).astype(np.float32),
                        np.sin(angles.astype(np.float64)).astype(np.float32))  # fmt: skip
                _rope_tables[(theta, d)] = have
    return have[0][:n], have[1][:n]


def rope(x: Any, heads: int, first: int, theta: float, o: NumpyOps) -> Any:
    """(n, heads·d) projections of positions first … first + n − 1 → (heads, n, d), each head's
    pairs (i, i + d/2) turned by its position's angles."""
    n, width = x.shape
    d = width // heads
    cos, sin = rope_table(theta, d, first + n)
    c, s = cos[first:, None, :], sin[first:, None, :]  # (n, 1, d/2)
    h = x.reshape(n, heads, d)  # (n, heads, d)
    x1, x2 = h[..., : d // 2], h[..., d // 2 :]
    if _is_torch(x):
        c, s = o.array(np.ascontiguousarray(c)), o.array(np.ascontiguousarray(s))
        return o.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).transpose(0, 1).contiguous()  # (heads, n, d)
    out = np.empty((heads, n, d), dtype=np.float32)  # (heads, n, d)
    o1, o2 = out[..., : d // 2].transpose(1, 0, 2), out[..., d // 2 :].transpose(1, 0, 2)  # (n, heads, d/2) views
    np.multiply(x1, c, out=o1)
    o1 -= x2 * s  # x1·cos − x2·sin
    np.multiply(x2, c, out=o2)
    o2 += x1 * s  # x2·cos + x1·sin
    return out


def linear(x: Any, weight: Any) -> Any:
    """x·Wᵀ with W stored (out, in), as torch.nn.Linear without a bias (MKL's product where installed)."""
    return blas.matmul(x, weight.T)  # (n, out)


def _weight_parts(out: int, floats: int) -> list[slice]:
    """A weight's rows (outputs) in one part per core, in multiples of 64 rows; one part for a weight
    of fewer than WIDE_FLOATS floats (`floats`: what the parts read in all)."""
    if nn.WORKERS == 1 or out < 256 or floats < WIDE_FLOATS:
        return [slice(0, out)]
    size = math.ceil(out / nn.WORKERS / 64) * 64
    return [slice(i, min(i + size, out)) for i in range(0, out, size)]


def wide_linear(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """linear() for a few rows: the weight's rows split over the cores, each part's outputs
    computed whole by one of them (the same numbers)."""
    parts = _weight_parts(weight.shape[0], weight.size)
    if len(parts) == 1:
        one: np.ndarray = linear(x, weight)
        return one
    out: np.ndarray = np.concatenate(nn.parallel(lambda r: linear(x, weight[r]), parts), axis=-1)  # (n, out)
    return out


def grouped_attend(q: Any, k: Any, v: Any, first: int, o: NumpyOps) -> Any:
    """softmax(q kᵀ/√d + causal mask) v with grouped heads: q (h, r, d) holds the queries at positions
    first … first + r − 1, k and v (h_kv, T, d) the keys and values of positions 0 … T − 1; query
    head i reads KV head i // (h / h_kv). Each head's output (h, r, d), float32."""
    h, r, d = q.shape
    kv, t = k.shape[0], k.shape[1]
    g = h // kv
    if _is_torch(q):
        kk, vv = k.repeat_interleave(g, dim=0), v.repeat_interleave(g, dim=0)  # (h, T, d)
        mask = o.causal_mask(r, t, first)
        return o.F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)  # type: ignore[attr-defined]
    qg = (q * np.float32(1 / math.sqrt(d))).reshape(kv, g * r, d)  # (h_kv, g·r, d): a group's queries, scaled
    s = qg @ np.swapaxes(k, -1, -2)  # (h_kv, g·r, T) scaled scores
    if first + 1 < t:  # some of the queries' keys lie later: −∞ there (keys first + 1 …, the last columns)
        hidden = _later(r, t - first)  # (r, t − first): 0 where query j sees key first + c, −∞ where not
        s.reshape(kv, g, r, t)[..., first:] += hidden
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)  # e^s: the weights times each row's Σ e^s
    sums = s @ np.ones(t, dtype=np.float32)  # (h_kv, g·r): a BLAS product, quicker than s.sum(-1)
    out = s @ v  # (h_kv, g·r, d)
    out /= sums[..., None]  # each row divided after the product: d numbers a row, not T
    return out.reshape(h, r, d)  # (h, r, d)


_masks: dict[tuple[int, int], np.ndarray] = {}


def _later(r: int, c: int) -> np.ndarray:
    """(r, c) float32: −∞ where column j > row i (a later key), 0 elsewhere; kept per shape."""
    mask = _masks.get((r, c))
    if mask is None:
        mask = _masks[(r, c)] = np.where(np.triu(np.ones((r, c), dtype=bool), 1), np.float32(-np.inf), np.float32(0))
        mask.flags.writeable = False
    return mask


def causal_attend(q: Any, k: Any, v: Any, first: int, o: NumpyOps) -> Any:
    """grouped_attend() without the keys the causal mask hides: the queries in chunks of CAUSAL_CHUNK
    rows, each chunk reading keys 0 … its last position only (~half the scores of a long prompt).
    The same weights and outputs up to float32 rounding (a softmax's sum over fewer zeros)."""
    r = q.shape[1]
    if _is_torch(q) or r <= CAUSAL_CHUNK:
        return grouped_attend(q, k, v, first, o)
    out = np.empty((q.shape[0], r, v.shape[-1]), dtype=np.float32)  # (h, r, d)
    for a in range(0, r, CAUSAL_CHUNK):
        b = min(a + CAUSAL_CHUNK, r)
        out[:, a:b] = grouped_attend(q[:, a:b], k[:, : first + b], v[:, : first + b], first + a, o)
    return out


def blocked_attend(q: Any, k: Any, v: Any, first: int, o: NumpyOps) -> Any:
    """grouped_attend() without a table of scores as wide as the keys: the keys and values read in
    blocks with an online softmax (the tiles chapter's arithmetic: app.lesson.tiles), so a long
    prompt's attention holds one block's scores at a time, memory n·b rather than n².

    NumPy: the queries in tiles of QUERY_TILE rows (a tile's block of scores stays in the caches), a
    group's g heads side by side as one matrix of g·t queries (one product per KV head): _tile()
    reads first the tile's own keys under the causal mask, then every key before them, whole, in
    blocks of KEY_BLOCK. torch (on a GPU): every query at once, in key blocks of TORCH_KEY_BLOCK (fewer
    kernel launches), through tiles.attend. The same outputs up to float32 rounding (tested against
    the whole softmax)."""
    h, r, d = q.shape
    kv, g = k.shape[0], h // k.shape[0]
    qg = q.reshape(kv, g, r, d)  # (h_kv, g, r, d): query head i reads KV head i // g
    if _is_torch(q):
        return tiles.attend(qg, k[:, None], v[:, None], TORCH_KEY_BLOCK, "causal", first).reshape(h, r, d)
    end = first + r
    k1 = np.empty((kv, end, d + 1), dtype=np.float32)  # (h_kv, T, d + 1): [k, 1], so that [k, 1]·[q, −m] = k·q − m
    k1[..., :d] = k[:, :end]
    k1[..., d] = 1
    vt = np.ascontiguousarray(np.swapaxes(v[:, :end], -1, -2))  # (h_kv, d_v, T): vᵀ, BLAS's quicker side
    out = np.empty((kv, g, r, v.shape[-1]), dtype=np.float32)  # (h_kv, g, r, d_v)
    scale = np.float32(1 / math.sqrt(d))
    with np.errstate(over="ignore"):  # e^(s − m) past float32's largest: _tile reads that block again
        for a in range(0, r, QUERY_TILE):
            b = min(a + QUERY_TILE, r)
            for j in range(kv):
                out[j, :, a:b] = _tile(qg[j, :, a:b], k1[j], vt[j], first + a, scale)
    return out.reshape(h, r, -1)  # (h, r, d_v)


def _tile(q: np.ndarray, k1: np.ndarray, vt: np.ndarray, seen: int, scale: np.float32) -> np.ndarray:
    """One KV head's tile of queries: q (g, t, d) at positions seen … seen + t − 1 of its g heads,
    k1 = [k, 1] (T, d + 1) and vᵀ (d_v, T) of positions 0 …: their attention output (g, t, d_v).

    tiles.online's arithmetic (running l = Σ e^(s − m) and o = Σ e^(s − m)·v; o / l at the end), each
    block's scores as keys × queries (b, g·t), with the passes over a block cut from six to one:
      - the tile's own keys first, under the causal mask: every query sees its own key, so m starts
        as a score it has (its largest there); then keys 0 … seen − 1, which every query sees whole;
      - q is scaled once (t·d numbers), not each block's scores;
      - the product subtracts m itself: [k, 1]·[q/√d, −m] = k·q/√d − m;
      - m need not be the largest score: o / l is the same for any m (e^(−m) cancels), so m moves
        only when e^(s − m) would grow too large for float32 (l would pass BIG): then that block is
        read again from its largest score, as tiles.online reads every block (α = e^(m_old − m)).
    A block then costs one e^x over its scores and three products: the scores, Σ e^(s − m) (with
    ones), Σ e^(s − m)·v. (tiles.online also takes each block's maximum, subtracts it, divides the
    scores by √d and sums with np.add.reduce: 1.4× this on SmolLM2's heads.)
    """
    g, t, d = q.shape
    cols = g * t
    qt = np.empty((d + 1, cols), dtype=np.float32)  # [q/√d, −m]ᵀ: the queries side by side
    np.multiply(q.reshape(cols, d).T, scale, out=qt[:d])
    # the tile's own keys, under the causal mask
    s = k1[seen : seen + t, :d] @ qt[:d]  # (t, g·t) scaled scores, keys × queries
    s.reshape(t, g, t)[...] += _earlier(t)
    m = s.max(axis=0)  # (g·t,) each query's largest score so far
    s -= m
    np.exp(s, out=s)
    ell = _ones(t) @ s  # (g·t,) Σ e^(s − m)
    out = vt[:, seen : seen + t] @ s  # (d_v, g·t) Σ e^(s − m)·v
    for c0 in range(0, seen, KEY_BLOCK):
        c1 = min(seen, c0 + KEY_BLOCK)
        np.negative(m, out=qt[d])
        s = k1[c0:c1] @ qt  # (b, g·t): s − m
        np.exp(s, out=s)  # e^(s − m), > 1 where a score passes m
        more = _ones(c1 - c0) @ s  # (g·t,) the block's Σ e^(s − m)
        if not (ell + more).max() < BIG:  # a score far above m: this block measured from its largest score
            s = k1[c0:c1] @ qt
            top = np.maximum(s.max(axis=0), 0)  # (g·t,) how far each query's m moves up
            s -= top
            m += top
            alpha = np.exp(-top)  # e^(m_old − m)
            ell *= alpha
            out *= alpha
            np.exp(s, out=s)
            more = _ones(c1 - c0) @ s
        ell += more
        out += vt[:, c0:c1] @ s
    out /= ell
    done: np.ndarray = out.T.reshape(g, t, -1)  # (g, t, d_v)
    return done


_ones_vec = np.ones(0, dtype=np.float32)


def _ones(n: int) -> np.ndarray:
    """n float32 ones (a sum over a block's keys as a BLAS product: ~4× quicker than np.add.reduce)."""
    global _ones_vec
    have = _ones_vec
    if have.shape[0] < n:
        have = _ones_vec = np.ones(max(n, KEY_BLOCK), dtype=np.float32)
    return have[:n]


def _earlier(t: int) -> np.ndarray:
    """(t, 1, t) float32: −∞ where key i comes after query j (i > j), 0 elsewhere (keys × queries)."""
    return _later(t, t).T[:, None, :]


def attend(q: Any, k: Any, v: Any, first: int, o: NumpyOps) -> Any:
    """The layer's attention: blocked_attend() for a long prompt's rows (past LONG keys), else
    causal_attend() (a short prompt's rows, or a token being written: its one row of scores, 9 × T
    numbers, is already linear in T)."""
    if k.shape[1] > LONG and q.shape[1] > WIDE_ROWS:
        return blocked_attend(q, k, v, first, o)
    return causal_attend(q, k, v, first, o)


class LlamaLayer:
    """The decoder's layer for weights w on backend o (app.model.families.base.Decoder)."""

    def __init__(self, w: W, spec: ModelSpec, o: NumpyOps, hooks: Hooks = NO_HOOKS) -> None:
        self.w, self.spec, self.o, self.hooks = w, spec, o, hooks
        self.attend: Callable[..., Any] = hooks.attend or attend
        self.numpy = o.name == "numpy"
        self.hq, self.hkv = spec.heads * spec.head_size, spec.kv_heads * spec.head_size
        self.act = o.activation("silu")

    def _wide(self, x: Any) -> bool:
        """Whether rows x are a few (a token being written): then the cores split each weight, not the rows."""
        return self.numpy and x.shape[0] <= WIDE_ROWS and nn.WORKERS > 1

    def _mm(self, x: Any, weight: Any) -> Any:
        """x·Wᵀ; a few rows with the weight's rows split over the cores (the work's shape decides)."""
        return wide_linear(x, weight) if self._wide(x) else linear(x, weight)

    def embed(self, ids: list[int], first: int) -> Any:
        return self.w[EMBED][ids]  # (n, C): no position embedding (RoPE turns q and k instead)

    def blocks(self, n: int, first: int) -> list[slice]:
        """Rows 0 … n − 1 (at positions first …) in one contiguous block per worker (one for a short
        prompt, a token being written, or torch), cut so that each block costs the same: a row's
        work is ROW_COST plus its position (the keys it reads; LONG_ROW_COST past LONG keys, read in
        blocks), so the first block is longer than the last."""
        per = nn.WORKERS if self.numpy and n >= nn.PARALLEL_ROWS else 1
        row = LONG_ROW_COST if first + n > LONG else ROW_COST
        cost = np.cumsum(row + first + np.arange(n, dtype=np.float64))  # (n,) the work of rows 0 … j
        cuts = [0, *(int(c) for c in np.searchsorted(cost, cost[-1] * np.arange(1, per) / per)), n]
        return [slice(a, b) for a, b in itertools.pairwise(cuts) if b > a]

    def project(self, i: int, x: Any, first: int, queries: slice | None = None) -> tuple[Any, Any, Any]:
        s, p, hq, hkv = self.spec, LAYER.format(i), self.hq, self.hkv
        h = rms_norm(x, self.w[p + ATTN_NORM], s.eps)  # (r, C)
        fused = self.w[p + QKV]  # (h·d + 2·h_kv·d, C): q's rows, then k's, then v's
        if queries is None:
            both = self._mm(h, fused)  # (r, h·d + 2·h_kv·d)
            qk = rope(both[:, : hq + hkv], s.heads + s.kv_heads, first, s.rope_theta, self.o)  # (h + h_kv, r, d)
            q, k, values = qk[: s.heads], qk[s.heads :], both[:, hq + hkv :]
        else:  # only some rows' queries are read (the prompt's last, at the last layer)
            kv = self._mm(h, fused[hq:])  # (r, 2·h_kv·d)
            k, values = rope(kv[:, :hkv], s.kv_heads, first, s.rope_theta, self.o), kv[:, hkv:]  # (h_kv, r, d)
            q = rope(self._mm(h[queries], fused[:hq]), s.heads, first + queries.start, s.rope_theta, self.o)
        v = self.o.split_heads(values, s.kv_heads)  # (h_kv, r, d)
        return q, k, v

    def gather(self, i: int, k: Any, v: Any) -> Any:
        return k, v

    def finish(self, i: int, x: Any, q: Any, keys: Any, first: int) -> Any:
        s, p, w = self.spec, LAYER.format(i), self.w
        a = self.attend(q, *keys, first, self.o)  # (h, rows, d)
        if self.hooks.heads is not None:
            a = self.hooks.heads(i, a)
        y = x + self._mm(self.o.merge_heads(a), w[p + OUT])  # (rows, C)
        return y + self._mlp(rms_norm(y, w[p + MLP_NORM], s.eps), p)  # (rows, C)

    def _mlp(self, h: Any, p: str) -> Any:
        """SwiGLU of normed rows h (r, C): (SiLU(h·W_gateᵀ) ⊙ h·W_upᵀ)·W_downᵀ, (r, C). A few rows:
        the F hidden units split over the cores, each core's part gate, up, SiLU and its share of
        W_down's product (r, C), the shares added: one hand-over for the feed-forward where
        splitting each product would make two."""
        F, gate_up, down = self.spec.intermediate, self.w[p + GATE_UP], self.w[p + DOWN]  # (2F, C), (C, F)
        if not self._wide(h):
            both = linear(h, gate_up)  # (r, 2F)
            act = self.act(both[:, :F])  # SiLU (r, F), a new array
            act *= both[:, F:]
            return linear(act, down)  # (r, C)

        def share(f: slice) -> np.ndarray:
            act = self.act(linear(h, gate_up[f]))  # (r, f)
            act *= linear(h, gate_up[F + f.start : F + f.stop])
            out: np.ndarray = linear(act, down[:, f])  # (r, C): this part's share of the output
            return out

        shares = nn.parallel(share, _weight_parts(F, gate_up.size + down.size))
        total = shares[0]
        for more in shares[1:]:
            total += more
        return total

    def shown(self, i: int, x: Any) -> Any:
        """transformers reports the last hidden state after the final RMSNorm."""
        return rms_norm(x, self.w[FINAL_NORM], self.spec.eps) if i == self.spec.layers - 1 else x  # (n, C)

    def logits(self, x: Any) -> Any:
        """The next-token scores (r, V) of the last layer's rows x (r, C): final RMSNorm, then x·Eᵀ
        (tied) or lm_head."""
        head = self.w[EMBED if self.spec.tied else LM_HEAD]  # (V, C)
        return self._mm(rms_norm(x, self.w[FINAL_NORM], self.spec.eps), head)  # (r, V)
