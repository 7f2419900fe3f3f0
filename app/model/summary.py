"""What the overview draws of every layer × head, for sentences up to the model's limit.

References:
  Clark et al., "What Does BERT Look At? An Analysis of BERT's Attention" (2019): per-head
  entropy and attention to [CLS]/[SEP] as summaries of a head.
  Vig & Belinkov, "Analyzing the Structure of Attention in a Transformer Language Model" (2019):
  mean attention distance, Σⱼ wᵢⱼ·|i − j|, averaged over queries.

Sending every head's n × n weights costs layers·heads·n² numbers (6·12·512² ≈ 19 million for
MiniLM at its limit); the overview needs far less. For each layer and head:

  pooled    (B, B) the weights seen through B × B blocks of tokens (B = min(n, BINS)): block (a, b)
            is the mean, over the queries of row block a, of the share their attention puts on
            the keys of column block b. Each row of a block map still sums to 1 (as merged word
            pieces do); with n ≤ BINS every block is one token and pooled is the weights.
  entropy   mean over queries of −Σⱼ wᵢⱼ log₂ wᵢⱼ, in bits: 0 when every query looks at one key,
            log₂(n) when it spreads evenly over all n
  distance  mean over queries of Σⱼ wᵢⱼ·|i − j|, in tokens: small for a head that reads its
            neighbours, large for one that reads far away
  top       the TOP strongest links (query, key, weight), each query's strongest key, strongest first

They are gathered while the forward runs (app.model.nn.attend shows each block of weights it
computes to an Observer: no weight is computed twice), or, for a layer the forward ran earlier or
on another backend, or another mask than the model's own, recomputed from the trace's q and k in
float32 as nn.attend computes them, a few heads at a time so that the scores stay in the CPU cache.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from app.attention import Mask, visible
from app.model import nn
from app.model.select import layer_heads
from app.model.trace import Trace

BINS = 32  # blocks per side of a pooled map: 32 × 32 cells draw sharply in an overview thumbnail
TOP = 8  # strongest links kept per head


@dataclass(frozen=True)
class Summary:
    """Every layer's and head's summary; arrays are (layers, heads, …)."""

    edges: np.ndarray  # (B + 1,) int: block b holds tokens edges[b] … edges[b + 1] − 1
    pooled: np.ndarray  # (L, H, B, B) float32
    entropy: np.ndarray  # (L, H) float64, bits
    distance: np.ndarray  # (L, H) float64, tokens
    top_query: np.ndarray  # (L, H, T) int
    top_key: np.ndarray  # (L, H, T) int
    top_weight: np.ndarray  # (L, H, T) float32


def block_edges(n: int, bins: int = BINS) -> np.ndarray:
    """Edges of min(n, bins) blocks of about equal size covering tokens 0 … n − 1."""
    b = min(n, bins)
    return (np.arange(b + 1) * n) // b  # (B + 1,)


_Blocks = dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


class _Layer:
    """One layer's summaries, filled block of rows by block of rows. Blocks never share a row, so
    the forward's threads fill one layer at once; only the row blocks of `pooled` that two blocks
    of rows share are added under a lock."""

    def __init__(self, heads: int, n: int, edges: np.ndarray, mask: Mask, blocks: _Blocks) -> None:
        self.mask = mask
        self.edges = edges
        self.blocks = blocks  # shared by a forward's layers: see _block
        self.by_rows = np.zeros((heads, len(edges) - 1, n), dtype=np.float32)  # Σ of each row block's weights
        self.nats = np.empty((heads, n))  # entropy of each query's row
        self.distance = np.empty((heads, n))  # Σⱼ wᵢⱼ·|i − j| of each query
        self.best_w = np.empty((heads, n), dtype=np.float32)
        self.best_k = np.empty((heads, n), dtype=np.int64)
        self.seen = np.zeros((heads, n), dtype=bool)
        self._lock = threading.Lock()

    def rows(
        self, heads: slice, first: int, shifted: np.ndarray, exps: np.ndarray, sums: np.ndarray, best: np.ndarray
    ) -> None:
        """A block of queries first … first + r − 1 as nn.Observer sees it: scores shifted so that each
        row's largest is 0 (−∞ where hidden), exps = e^shifted (g, r, n), each row's Σ exps and its
        strongest key (g, r). The weights exps / sums are never made: each sum below is of exps,
        divided by its row's Σ after."""
        r, n = exps.shape[1], exps.shape[2]
        rows = slice(first, first + r)
        if self.mask == "causal":
            shifted = np.maximum(shifted, np.float32(-1e30))  # e^s is 0 there: 0·(−∞) would be NaN
        inv = 1 / sums  # (g, r): each row's strongest weight, e^0 / Σ
        self.best_w[heads, rows] = inv
        self.best_k[heads, rows] = best
        # −Σ w log w of a softmax row is log Σ − Σ w·s, for w = e^s / Σ and s shifted as above
        self.nats[heads, rows] = np.log(sums) - inv * np.einsum("gij,gij->gi", exps, shifted)
        gap, blocks, ones = self._block(first, r, n)
        self.distance[heads, rows] = inv * np.einsum("gij,ij->gi", exps, gap)
        part = (ones * inv[:, None, :]) @ exps  # (g, S, n): Σ of the weights of each row block's rows
        with self._lock:
            self.by_rows[heads, blocks] += part
        self.seen[heads, rows] = True

    def _block(self, first: int, r: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For queries first … first + r − 1: |i − j| (r, n), the row blocks of `pooled` they fall in
        (S,), and (S, r) ones that sum each piece's rows; made once per block of rows (every layer
        and group of heads of a forward has the same blocks)."""
        if (first, r) in self.blocks:
            return self.blocks[first, r]
        idx = np.arange(n, dtype=np.float32)
        gap = np.abs(idx[first : first + r, None] - idx[None, :])  # (r, n): |i − j|
        cuts = np.unique(np.clip(self.edges, first, first + r))  # the rows, cut where row blocks start
        blocks = np.searchsorted(self.edges, cuts[:-1], side="right") - 1  # (S,)
        ones = np.zeros((len(blocks), r), dtype=np.float32)
        ones[np.repeat(np.arange(len(blocks)), np.diff(cuts)), np.arange(r)] = 1  # (S, r)
        self.blocks[first, r] = gap, blocks, ones  # a race makes the same arrays twice: harmless
        return gap, blocks, ones

    def recompute(self, q: np.ndarray, k: np.ndarray) -> list[Callable[[], None]]:
        """The work of filling every row from the layer's q, k (h, n, d), as nn.attend computes the
        weights: one call per block of rows and group of heads (as attend's, so that each one's
        scores and their e^s stay in a core's cache), for the caller to spread over the cores with
        those of other layers (nn.parallel inside a pool thread would find no thread to help it)."""
        h, n, _ = q.shape
        kt = nn.keys_across(k)  # (h, d, n)
        hidden = ~visible(n) if self.mask == "causal" else None

        def group(g: slice, r: slice) -> None:
            exps = np.empty((g.stop - g.start, r.stop - r.start, n), dtype=np.float32)  # (g, rows, n)
            self.rows(g, r.start, *nn.softmax_pieces(q[g, r], kt[g], None if hidden is None else hidden[r], exps))

        work: list[Callable[[], None]] = []
        for r in nn.row_blocks(n):
            step = max(1, nn.CHUNK_CELLS // ((r.stop - r.start) * n))
            work += [partial(group, slice(i, min(i + step, h)), r) for i in range(0, h, step)]
        return work

    def result(self, top: int) -> tuple[np.ndarray, ...]:
        starts = self.edges[:-1]
        per_block = np.diff(self.edges).astype(np.float32)[:, None]  # (B, 1) queries in each row block
        pooled = np.add.reduceat(self.by_rows, starts, axis=-1) / per_block  # (h, B, B)
        strongest = np.argsort(-self.best_w, axis=-1, kind="stable")[:, :top]  # (h, T) queries
        return (
            pooled,
            self.nats.mean(axis=-1) / math.log(2),
            self.distance.mean(axis=-1),
            strongest,
            np.take_along_axis(self.best_k, strongest, axis=-1),
            np.take_along_axis(self.best_w, strongest, axis=-1),
        )


class Collector:
    """An nn.Observer that keeps the summaries of the layers a forward runs, for one mask.

    Layers are told apart by their keys: each layer's k is one array, passed to every block of its
    attention and kept in the trace (trace.k[i] is that very array).
    """

    def __init__(self, n: int, heads: int, mask: Mask, bins: int = BINS) -> None:
        self.n, self.heads, self.mask = n, heads, mask
        self.edges = block_edges(n, bins)
        self.layers: dict[int, _Layer] = {}  # id(k) → its layer's summaries
        self.blocks: _Blocks = {}  # shared by the layers (_Layer._block)
        self._lock = threading.Lock()

    def __call__(
        self, k: np.ndarray, heads: slice, first: int, shifted: np.ndarray, exps: np.ndarray, sums: np.ndarray,
        best: np.ndarray,
    ) -> None:  # fmt: skip
        if k.shape[1] != self.n:
            return  # not this sentence's forward
        with self._lock:
            layer = self.layers.get(id(k))
            if layer is None:
                layer = self.layers[id(k)] = _Layer(self.heads, self.n, self.edges, self.mask, self.blocks)
        layer.rows(heads, first, shifted, exps, sums, best)

    def summary(self, trace: Trace, top: int = TOP) -> Summary:
        """Every layer of the trace: those seen whole during the forward, the rest recomputed from q, k."""

        layers, work = [], []
        for i in range(trace.layers):
            layer = self.layers.get(id(trace.k[i]))
            if layer is None or not layer.seen.all():
                layer = _Layer(self.heads, self.n, self.edges, self.mask, self.blocks)
                q, k, _ = layer_heads(trace, i)  # a grouped-query model's KV heads, one per query head
                work += layer.recompute(q, k)
            layers.append(layer)
        nn.parallel(lambda f: f(), work)  # every group of heads of every layer to recompute, on the cores
        parts = nn.parallel(lambda layer: layer.result(min(top, self.n)), layers)
        pooled, entropy, distance, top_q, top_k, top_w = (np.stack(p) for p in zip(*parts, strict=True))
        return Summary(self.edges, pooled, entropy, distance, top_q, top_k, top_w)


def summarize(trace: Trace, mask: Mask, bins: int = BINS, top: int = TOP) -> Summary:
    """The summaries of every layer the trace has q and k of, recomputed from them."""
    h, n = trace.q[0].shape[:2]
    return Collector(n, h, mask, bins=bins).summary(trace, top)
