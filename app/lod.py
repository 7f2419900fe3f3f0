"""One head's attention over a long sentence without its n × n table: the rows a view focuses on,
exactly, and a level-of-detail summary of the whole table.

References:
  app/lesson/tiles.py: the online softmax (Milakov & Gimelshein 2018; Dao et al., FlashAttention,
      2022) — each query's largest score m, its sum l = Σ e^(s − m) and its output, the keys read in
      blocks, never the n × n table. The chapter "Attention without the n×n table" teaches it.
  Dao et al. (2022), §3.1 and appendix B.4 (the backward pass): once a query's m and l are known,
      any tile of its weights is e^(s − m) / l, recomputed from q and k when it is needed.
  app/model/summary.py: the overview's pooled maps, the same block means for every head at once.

Two passes over the keys, each holding one tile of scores at a time:

  1. tiles.online(q, k, v, TILE)   m, l and o for a tile of queries (o / l is their output)
  2. each tile of those × keys     w = e^(q·k/√d_k − m) / l (0 where the mask hides a key), reduced
                                   at once into each query's share of every key block, the block's
                                   largest weight, and the query's strongest keys so far

Summary (one head over n tokens, blocks of b tokens: B = ⌈n / b⌉ of them, the last one shorter when
b does not divide n), float32 as the model's q and k are:

  edges        (B + 1,)  block c holds tokens edges[c] … edges[c + 1] − 1
  mean         (B, B)    over the queries of row block a, the mean share of their attention that
                         lands on key block c: a row of the map sums to 1 as a row of weights does
  peak         (B, B)    the largest weight of any cell in the block
  top_keys     (n, K)    each query's K strongest keys, strongest first (−1 past the keys it sees)
  top_weights  (n, K)    their weights (0 past the keys it sees)

Rows (the r queries a view focuses on), float64 from the same q, k, v: each one's scores (r, n) =
q·k, scaled = scores / √d_k, masked (−∞ where the mask hides a key), weights and output (r, d_v) —
app.attention's stages, row by row, equal to its whole table's rows to float64 rounding.

Shapes: q, k (n, d_k) and v (n, d_v) of one head. Masks as app.attention's: "causal", query i sees
keys 0 … i. Memory: the tiles (TILE_ROWS × TILE of float32) and arrays of n × B and n × K. The tiles of
queries go to the cores (app.model.nn.parallel), each through both passes.
This module imports nothing from the web side of the app.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from app.attention import MASKS, Mask
from app.lesson import tiles
from app.model import nn

BLOCKS = 16  # blocks per side of the summary by default (4,096 tokens in blocks of 256): 16 × 16 legible numbers
TOP = 8  # strongest keys kept per query by default
TILE = 256  # keys per block of the online softmax (pass 1) and about as many per tile of pass 2
TILE_ROWS = 256  # queries per tile of pass 2: 256 × 256 float32 scores and weights stay in a core's cache


def default_block(n: int, blocks: int = BLOCKS) -> int:
    """The block size that cuts n tokens into at most `blocks` blocks: ⌈n / blocks⌉."""
    return max(1, -(-n // blocks))


def block_edges(n: int, block: int) -> np.ndarray:
    """Edges of the blocks of `block` tokens covering 0 … n − 1, the last one shorter: (B + 1,) int."""
    return np.append(np.arange(0, n, block), n)


@dataclass(frozen=True)
class Summary:
    """A head's whole n × n table in blocks, and each query's strongest keys (see the module's docstring)."""

    block: int
    edges: np.ndarray  # (B + 1,) int
    mean: np.ndarray  # (B, B) float32: row block a's mean share on key block c
    peak: np.ndarray  # (B, B) float32: the block's largest weight
    top_keys: np.ndarray  # (n, K) int, −1 where a query sees fewer than K keys
    top_weights: np.ndarray  # (n, K) float32


@dataclass(frozen=True)
class Rows:
    """The stages of the queries `rows`, every key each (float64, as app.attention's)."""

    rows: np.ndarray  # (r,) int: the queries
    scores: np.ndarray  # (r, n) q·k
    scaled: np.ndarray  # (r, n) scores / √d_k
    masked: np.ndarray  # (r, n) scaled, −∞ where the mask hides a key
    weights: np.ndarray  # (r, n) softmax of masked: each row sums to 1
    output: np.ndarray  # (r, d_v)


def _checked(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Mask) -> None:
    if q.ndim != 2 or k.shape != q.shape or v.ndim != 2 or v.shape[0] != q.shape[0] or 0 in q.shape + v.shape:
        raise ValueError(f"q, k (n, d_k) and v (n, d_v) of one head, got {q.shape}, {k.shape}, {v.shape}")
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")


def summarize(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Mask, block: int | None = None, top: int = TOP
) -> Summary:
    """The level-of-detail summary of one head's weights, in float32 (see the module's docstring)."""
    _checked(q, k, v, mask)
    n, d_k = q.shape
    block = default_block(n) if block is None else block
    if isinstance(block, bool) or not 1 <= block <= n:
        raise ValueError(f"block must be 1 … {n} (the tokens), got {block!r}")
    if top < 1:
        raise ValueError(f"top must be ≥ 1, got {top!r}")
    top = min(top, n)
    q32, k32, v32 = (np.ascontiguousarray(a, dtype=np.float32) for a in (q, k, v))
    edges = block_edges(n, block)
    blocks = len(edges) - 1
    shares = np.zeros((n, blocks), dtype=np.float32)  # each query's share of every key block
    peaks = np.zeros((n, blocks), dtype=np.float32)  # its largest weight in every key block
    top_s = np.full((n, top), -np.inf, dtype=np.float32)  # its strongest scores so far …
    top_j = np.full((n, top), -1, dtype=np.int64)  # … and their keys
    m_all, l_all = np.empty(n, dtype=np.float32), np.empty(n, dtype=np.float32)
    per_tile = max(1, TILE // block) * block  # keys per tile of pass 2: whole blocks
    scale = np.float32(1 / math.sqrt(d_k))

    def rows_from(r0: int) -> None:
        """Both passes for queries r0 … r0 + TILE_ROWS − 1 (their own rows of the arrays above)."""
        r1 = min(n, r0 + TILE_ROWS)
        seen = r1 if mask == "causal" else n  # keys after the tile's last query are hidden from all of it
        offset = r0 if mask == "causal" else 0
        run = tiles.online(q32[r0:r1], k32[:seen], v32[:seen], TILE, mask, offset)  # pass 1: m and l
        m_all[r0:r1], l_all[r0:r1] = run.m, run.l
        m, ell = run.m[:, None], run.l[:, None]  # (R, 1)
        for c0 in range(0, seen, per_tile):  # pass 2
            c1 = min(seen, c0 + per_tile)
            s = (q32[r0:r1] * scale) @ k32[c0:c1].T  # (R, T) scaled scores
            if mask == "causal" and c1 - 1 > r0:  # some of the tile's keys come after some of its queries
                np.copyto(s, -np.inf, where=np.arange(c0, c1)[None, :] > np.arange(r0, r1)[:, None])
            w = np.exp(s - m)  # (R, T) e^(s − m)
            w /= ell  # the weights
            first = c0 // block
            starts = edges[first : first + -(-(c1 - c0) // block)] - c0  # the tile's blocks, from its start
            shares[r0:r1, first : first + len(starts)] = np.add.reduceat(w, starts, axis=1)
            peaks[r0:r1, first : first + len(starts)] = np.maximum.reduceat(w, starts, axis=1)
            _keep_top(top_s[r0:r1], top_j[r0:r1], s, c0)

    # the tiles of queries on the cores, the costliest (a causal query's later rows read more keys) first
    nn.parallel(rows_from, list(range(0, n, TILE_ROWS))[::-1])
    order = np.lexsort((top_j, -top_s), axis=-1)  # strongest first; among equal scores the earlier key
    top_s, top_j = np.take_along_axis(top_s, order, -1), np.take_along_axis(top_j, order, -1)
    hidden = np.isneginf(top_s)  # fewer visible keys than K (a causal query near the start)
    top_w = np.where(hidden, np.float32(0), np.exp(top_s - m_all[:, None]) / l_all[:, None]).astype(np.float32)
    top_j[hidden] = -1
    starts, sizes = edges[:-1], np.diff(edges).astype(np.float32)
    mean = np.add.reduceat(shares, starts, axis=0) / sizes[:, None]  # (B, B) the mean over each row block
    peak = np.maximum.reduceat(peaks, starts, axis=0)  # (B, B)
    return Summary(block, edges, mean.astype(np.float32), peak, top_j, top_w)


def _keep_top(top_s: np.ndarray, top_j: np.ndarray, s: np.ndarray, c0: int) -> None:
    """Each row's K strongest scores among those kept (top_s, top_j: (R, K)) and a tile's s (R, T) of
    keys c0 …, written back into top_s and top_j."""
    K = top_s.shape[1]
    both_s = np.concatenate([top_s, s], axis=1)  # (R, K + T)
    both_j = np.concatenate([top_j, np.broadcast_to(np.arange(c0, c0 + s.shape[1]), s.shape)], axis=1)
    best = np.argpartition(-both_s, K - 1, axis=1)[:, :K]  # (R, K), in no order
    top_s[...] = np.take_along_axis(both_s, best, 1)
    top_j[...] = np.take_along_axis(both_j, best, 1)


def rows(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Mask, which: list[int] | np.ndarray) -> Rows:
    """The stages of queries `which`, float64: each query's m, l and output from tiles.online (one run
    per stretch of consecutive queries, at its position), then its weights e^(s − m) / l."""
    _checked(q, k, v, mask)
    n, d_k = q.shape
    which = np.asarray(which, dtype=np.int64).reshape(-1)
    if which.size and (which.min() < 0 or which.max() >= n):
        raise ValueError(f"rows must be 0 … {n - 1}, got {which.tolist()}")
    q64, k64, v64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    scores = q64[which] @ k64.T  # (r, n)
    scaled = scores / math.sqrt(d_k)
    masked = scaled.copy()
    if mask == "causal":
        np.copyto(masked, -np.inf, where=np.arange(n)[None, :] > which[:, None])
    m, ell, o = np.empty(len(which)), np.empty(len(which)), np.empty((len(which), v.shape[1]))
    for a, b in _stretches(which):
        first = int(which[a])
        run = tiles.online(q64[first : first + b - a], k64, v64, TILE, mask, offset=first if mask == "causal" else 0)
        m[a:b], ell[a:b], o[a:b] = run.m, run.l, run.output
    weights = np.exp(masked - m[:, None]) / ell[:, None]  # (r, n): e^(−∞) = 0 where hidden
    return Rows(which, scores, scaled, masked, weights, o)


def _stretches(which: np.ndarray) -> list[tuple[int, int]]:
    """(a, b) for each stretch which[a:b] of consecutive queries (i, i + 1, …)."""
    cuts = [0, *(np.flatnonzero(np.diff(which) != 1) + 1).tolist(), len(which)]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
