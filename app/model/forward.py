"""Rows through a model's layers, for every family: the views' trace, a prompt's prefill and each
written token go through run() and the family's one layer (app.model.families.base.Layer).

    blocks = layer.blocks(n, first)           how the rows are shared: one block per worker, or one
    each block: layer `start`'s q, k, v        k and v stored (a trace's arrays, or writing's KV cache)
    for each layer i:
        ─── the workers meet: every row's keys and values of layer i are stored ───
        each block: finish(i) → its rows' output, then project(i + 1) → their q, k, v of the next layer

A block's queries and hidden rows never leave its worker; the workers meet once a layer. A view of
layer L runs layers 0 … L − 1 and layer L's projections only (open_last); a prompt's prefill needs
only its last row's output from the last layer (last_only). With torch one block holds every row
(torch threads its own kernels).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

import numpy as np

from app.attention import Backend
from app.model.families import FAMILIES
from app.model.families.base import NO_HOOKS, Decoder, Hooks, Layer, ModelSpec
from app.model.nn import NumpyOps, ops
from app.model.trace import GONE, Trace
from app.model.weights import Weights


class Store(Protocol):
    """Where a run keeps each layer's keys and values (and, for a trace, queries) by position."""

    def put(self, i: int, first: int, q: Any, k: Any, v: Any) -> None:
        """Layer i's q (h, r, d), k and v (h_kv, r, d) of positions first … first + r − 1."""

    def get(self, i: int, end: int) -> tuple[Any, Any]:
        """Layer i's keys and values of positions 0 … end − 1: 2 × (h_kv, end, d)."""


Seen = Callable[[int, Any, Any], None]  # (layer i, the last block's queries, what finish reads of layer i)


def run(
    layer: Layer, o: NumpyOps, x: Any, first: int, start: int, stop: int, store: Store, *, q: Any = None,
    open_last: bool = False, last_only: bool = False, seen: Seen | None = None,
    kept: Callable[[int, list[Any]], None] | None = None,
) -> list[Any]:  # fmt: skip
    """Rows x (n, C) at positions first … first + n − 1 through layers start … stop − 1: each block's
    output rows (the last row's alone with last_only), in order.

    q         layer `start`'s queries (h, n, d) when known (a trace's open layer: its k and v are stored)
    open_last stop at layer stop − 1's q, k, v (all a view of it shows); the rows returned are its input
    last_only only the last row's output is read: the last layer computes every row's k and v, but the
              query, attention and feed-forward of the last row alone
    seen      called once a layer, after the workers meet (writing watches one head's weights)
    kept      called with each layer's output blocks once every block has it (a trace keeps them)
    """
    n, end, top = x.shape[0], first + x.shape[0], stop - 1
    blocks = layer.blocks(n, first)
    xs = [x[b] for b in blocks]  # each block's rows (r, C)
    qs: list[Any] = [None] * len(blocks)  # each block's queries of the current layer (h, r, d)

    def project(i: int, j: int) -> None:
        b, queries = blocks[j], None
        if last_only and i == top:  # the prompt's last row's query only, in the last block
            r = b.stop - b.start
            queries = slice(r - 1, r) if j == len(blocks) - 1 else slice(0, 0)
        qs[j], k, v = layer.project(i, xs[j], first + b.start, queries)
        store.put(i, first + b.start, qs[j] if queries is None else None, k, v)

    if q is None:
        o.parallel(partial(project, start), range(len(blocks)))
    else:
        qs = [q[:, b] for b in blocks]
    for i in range(start, stop):
        if open_last and i == top:
            break
        keys = layer.gather(i, *store.get(i, end))  # (one meeting a layer: layer i's keys and values stored)
        if seen is not None:
            seen(i, qs[-1], keys)
        if last_only and i == top:
            return [layer.finish(i, xs[-1][-1:], qs[-1], keys, end - 1)]  # (1, C)

        def step(j: int, i: int = i, keys: Any = keys) -> None:
            """Block j through the rest of layer i (its q, k, v known), then its q, k, v of layer i + 1."""
            xs[j] = layer.finish(i, xs[j], qs[j], keys, first + blocks[j].start)
            if i < top:
                project(i + 1, j)

        o.parallel(step, range(len(blocks)))
        if kept is not None:
            kept(i, xs)
    return xs


class TraceStore:
    """A trace's keys, values and queries: one array per layer for the whole sentence (n positions),
    the earlier layers' those of the trace it continues; and the hidden state after each layer run."""

    def __init__(
        self, layer: Layer, o: NumpyOps, spec: ModelSpec, n: int, start: Trace, stop: int, drop: int = 0
    ) -> None:
        self.layer, self.o, self.drop, self.first = layer, o, drop, len(start.hidden)  # first: hidden index of shown[0]
        self.q: list[Any] = [o.array(a) for a in start.q]
        self.k: list[Any] = [o.array(a) for a in start.k]
        self.v: list[Any] = [o.array(a) for a in start.v]
        self.shown: list[np.ndarray] = []
        d = spec.head_size
        for _ in range(len(self.k), stop):  # the layers this run adds (filled block by block)
            self.q.append(o.empty((spec.heads, n, d)))
            self.k.append(o.empty((spec.kv_heads, n, d)))
            self.v.append(o.empty((spec.kv_heads, n, d)))

    def put(self, i: int, first: int, q: Any, k: Any, v: Any) -> None:
        if k.shape[1] == self.k[i].shape[1]:  # every row at once: kept as made, not copied
            self.q[i], self.k[i], self.v[i] = q, k, v
            return
        rows = slice(first, first + k.shape[1])
        self.q[i][:, rows], self.k[i][:, rows], self.v[i][:, rows] = q, k, v

    def get(self, i: int, end: int) -> tuple[Any, Any]:
        return self.k[i], self.v[i]  # the whole arrays: the observer of nn.attend tells layers apart by them

    def hidden(self, i: int, xs: list[Any]) -> None:
        """Layer i has run: its output kept; below `drop`, its q, k, v and its input let go as the rows flow on."""
        self.shown.append(self.o.numpy(self.layer.shown(i, self.o.cat(xs, 0))))
        if i < self.drop:
            self.q[i] = self.k[i] = self.v[i] = GONE
            if i >= self.first:  # its input came from this run
                self.shown[i - self.first] = GONE


def layer_of(weights: Weights, spec: ModelSpec, backend: Backend, hooks: Hooks = NO_HOOKS) -> tuple[Layer, NumpyOps]:
    """The family's layer for the model's weights on a backend (its once-per-model preparation done)."""
    family = FAMILIES[spec.kind]
    family.prepare(weights, spec)
    o = ops(backend)
    return family.layer(o.weights(weights), spec, o, hooks), o


def trace(
    ids: list[int],
    weights: Weights,
    spec: ModelSpec,
    backend: Backend = "numpy",
    layers: int | None = None,
    start: Trace | None = None,
    open_last: bool = False,
    hooks: Hooks = NO_HOOKS,
    drop: int = 0,
) -> Trace:
    """The trace of layers 0 … layers − 1 (all by default), continuing `start`, a shorter trace of
    the same ids, when given: a view of layer L needs only the layers up to L. open_last: the last
    layer stops at its q, k, v (all a view of it shows); a later call finishes it. drop: layers
    0 … drop − 1 keep nothing once the rows have flowed through them (Trace.dropped; a long
    sentence's view: drop = L keeps layer L's q, k, v and its input only)."""
    layer, o = layer_of(weights, spec, backend, hooks)
    start = start or Trace([], [], [], [o.numpy(layer.embed(ids, 0))])
    stop = spec.layers if layers is None else layers
    begin = len(start.hidden) - 1  # the first layer to run (its q, k, v known when the trace left it open)
    if begin >= stop:
        return start
    drop = min(drop, stop - 1 if open_last else stop)  # never the layer a view shows, nor the last rows
    store = TraceStore(layer, o, spec, len(ids), start, stop, drop)
    q = store.q[begin] if begin < len(start.q) else None
    run(layer, o, o.array(start.hidden[-1]), 0, begin, stop, store, q=q, open_last=open_last, kept=store.hidden)
    qs = [*start.q, *(a if a is GONE else o.numpy(a) for a in store.q[len(start.q) :])]
    ks = [*start.k, *(a if a is GONE else o.numpy(a) for a in store.k[len(start.k) :])]
    vs = [*start.v, *(a if a is GONE else o.numpy(a) for a in store.v[len(start.v) :])]
    hidden = [*start.hidden, *store.shown]
    if drop:
        for arrays in (qs, ks, vs):
            arrays[:drop] = [GONE] * min(drop, len(arrays))
        hidden[:-1] = [GONE if j < drop else h for j, h in enumerate(hidden[:-1])]
    return Trace(qs, ks, vs, hidden, dropped=max(drop, start.dropped))


def step(
    ids: list[int], weights: Weights, spec: ModelSpec, backend: Backend, store: Store, first: int,
    seen: Seen | None = None, hooks: Hooks = NO_HOOKS,
) -> np.ndarray:  # fmt: skip
    """A decoder's tokens `ids` at positions first … through every layer, their keys and values into
    `store` (writing's KV cache): the next-token scores of the last one (V,) float32. A prompt (the
    prefill) or a written token alike."""
    layer, o = layer_of(weights, spec, backend, hooks)
    assert hasattr(layer, "logits"), f"{spec.kind} models do not write"
    decoder: Decoder = layer  # type: ignore[assignment]
    x = decoder.embed(ids, first)  # (n, C)
    last = run(decoder, o, x, first, 0, spec.layers, store, last_only=True, seen=seen)[-1][-1:]  # (1, C)
    return np.asarray(o.numpy(decoder.logits(last))[0], dtype=np.float32)  # (V,)
