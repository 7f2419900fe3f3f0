"""Attention without the n×n table: the keys read in blocks, the softmax kept as it goes (online).

References:
  Milakov & Gimelshein, "Online normalizer calculation for softmax" (2018), algorithm 3: a running
      maximum m and a running sum l of e^(s − m), rescaled by e^(m_old − m_new) when the maximum grows.
  Dao, Fu, Ermon, Rudra & Ré, "FlashAttention: Fast and Memory-Efficient Exact Attention with
      IO-Awareness" (2022), algorithm 1: the same for the output, one block of keys and values at a time.
  Dao, "FlashAttention-2" (2023), algorithm 1: the output kept un-normalised, divided by l once at the end.
  app/attention.py: the same attention with the whole n×n table, which this equals to the last digits.

For one query q, with scores s_j = q·k_j / √d_k, the keys and values are read in blocks B of b keys
(the last block may be short). Three running numbers start at m = −∞, l = 0, o = 0; each block:

  top    max_{j∈B} s_j              the block's largest score (−∞ when the mask hides all of B)
  m      max(m_old, top)            the largest score read so far
  α      e^(m_old − m)              ≤ 1: what everything kept so far is worth measured from the new m
  p_j    e^(s_j − m)                ≤ 1, for each key j of B (0 where the mask hides j)
  l      α·l_old + Σ_j p_j          = Σ e^(s − m) over every key read so far
  o      α·o_old + Σ_j p_j·v_j      = Σ e^(s − m)·v over every key read so far

After the last block, o / l = Σ_j softmax(s)_j·v_j: the attention output, exactly. Held at once: one
block's scores (n × b) and each query's m, l and o, never the n × n table.

  steps()   every block recorded (scores, top, α, p, m, l, o): what the lesson shows
  online()  the same arithmetic, nothing recorded (blocks a causal query cannot see are skipped):
            the final m, l, o; attend() is its output o / l

Shapes: q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v). Leading axes broadcast as np.matmul's
do (heads: (h, n, d); grouped-query attention: q (kv, group, n, d) against k, v (kv, 1, n, d)).
Masks: "full", every query sees every key; "causal", query i stands at position offset + i and sees
keys 0 … offset + i (offset 0: q and k are the same tokens; a decoder reading its cache: offset = n_k − n_q).
Arithmetic in float32 when q, k and v are float32 (or narrower), else float64.
online() and attend() take torch tensors too (a decoder's q, k, v on a GPU, ATTENTION_BACKEND=torch): the
same arithmetic, each step the torch function of the NumPy one, on the tensors' device; torch is imported
only then. This module imports nothing from the web side of the app.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.attention import MASKS, Mask


@dataclass(frozen=True)
class Step:
    """One block read: keys start … stop − 1, and each query's numbers after it."""

    block: int  # 0-based
    start: int
    stop: int
    scores: np.ndarray  # (..., n_q, b) q·k/√d_k for the block's keys; −∞ where the mask hides a key
    top: np.ndarray  # (..., n_q) the block's largest score; −∞ where it hides every key
    alpha: np.ndarray  # (..., n_q) e^(m_old − m); 0 at a query's first visible key (m_old = −∞)
    p: np.ndarray  # (..., n_q, b) e^(s − m); 0 where hidden
    m: np.ndarray  # (..., n_q)
    l: np.ndarray  # (..., n_q)  # noqa: E741 (the papers' name)
    o: np.ndarray  # (..., n_q, d_v)


@dataclass(frozen=True)
class Running:
    """What is kept after the last block: each query's m, l and o (o / l is the output)."""

    m: np.ndarray  # (..., n_q) the largest score
    l: np.ndarray  # (..., n_q) Σ e^(s − m)  # noqa: E741
    o: np.ndarray  # (..., n_q, d_v) Σ e^(s − m)·v

    @property
    def output(self) -> np.ndarray:
        out: np.ndarray = self.o / self.l[..., None]  # (..., n_q, d_v)
        return out


@dataclass(frozen=True)
class Tiles:
    """Every block of one tiled attention, in order, and what it ends with."""

    block: int
    mask: Mask
    offset: int
    steps: tuple[Step, ...]
    running: Running

    @property
    def output(self) -> np.ndarray:
        return self.running.output


@dataclass(frozen=True)
class Held:
    """Numbers held at once for one head: the tiled way's block of scores and running numbers, against
    the plain way's n × n table (both also hold q, k, v and the output)."""

    tile: int  # n_q × b: the scores of one block
    table: int  # n_q × n_k: the scores of the plain way
    running: int  # n_q × (2 + d_v): each query's m, l and o


def held(n_q: int, n_k: int, block: int, d_v: int) -> Held:
    return Held(tile=n_q * min(block, n_k), table=n_q * n_k, running=n_q * (2 + d_v))


def blocks(n_k: int, block: int) -> list[tuple[int, int]]:
    """The blocks of keys as (start, stop): b keys each, the last one shorter when b does not divide n_k."""
    return [(start, min(start + block, n_k)) for start in range(0, n_k, block)]


def steps(q: np.ndarray, k: np.ndarray, v: np.ndarray, block: int, mask: Mask = "full", offset: int = 0) -> Tiles:
    """Tiled attention with every block recorded: each query reads every block (a block the mask hides
    from it leaves its numbers as they were: top = −∞, α = 1, p = 0)."""
    q, k, v = _checked(q, k, v, block, mask, offset)
    m, ell, o = _start(q, k, v)
    d_k, n_q = q.shape[-1], q.shape[-2]
    rows = np.arange(n_q) + offset  # (n_q,) each query's position
    done = []
    for i, (start, stop) in enumerate(blocks(k.shape[-2], block)):
        s = _scores(q, k[..., start:stop, :], d_k)  # (..., n_q, b)
        if mask == "causal":
            np.copyto(s, -np.inf, where=np.arange(start, stop) > rows[:, None])  # key after the query
        top, alpha, p = _read(m, ell, o, s, v[..., start:stop, :], keep=True)
        done.append(Step(i, start, stop, s, top, alpha, p, m.copy(), ell.copy(), o.copy()))
    return Tiles(block, mask, offset, tuple(done), Running(m, ell, o))


def online(
    q: Any, k: Any, v: Any, block: int, mask: Mask = "full", offset: int = 0, running: Running | None = None
) -> Running:
    """Tiled attention for real use: each query's final m, l and o, nothing recorded. Under the causal
    mask a block is read only by the queries that see some of it, and masked only where a query sees
    part of it. Memory: one block's scores (..., n_q, b) and the running numbers. NumPy arrays, or
    torch tensors (Running then holds tensors).

    `running`: the running numbers after some earlier keys (another call's Running, left unchanged):
    these keys are read on from there, as if both calls' keys were one call's (the blocks continue)."""
    if _is_torch(q):
        return _online_torch(q, k, v, block, mask, offset, running)
    q, k, v = _checked(q, k, v, block, mask, offset)
    m, ell, o = _start(q, k, v) if running is None else _continued(running, q, k, v)
    d_k, n_q = q.shape[-1], q.shape[-2]
    for start, stop in blocks(k.shape[-2], block):
        first = 0 if mask == "full" else max(0, start - offset)  # queries before `first` see no key of the block
        if first >= n_q:
            break  # causal: this block and every later one come after every query
        s = _scores(q[..., first:, :], k[..., start:stop, :], d_k)  # (..., n_q − first, b)
        if mask == "causal" and (part := min(n_q, stop - 1 - offset) - first) > 0:  # rows that miss some keys
            hidden = np.arange(start, stop) > (np.arange(first, first + part) + offset)[:, None]  # (part, b)
            np.copyto(s[..., :part, :], -np.inf, where=hidden)
        _read(m[..., first:], ell[..., first:], o[..., first:, :], s, v[..., start:stop, :], keep=False)
    return Running(m, ell, o)


def attend(q: Any, k: Any, v: Any, block: int, mask: Mask = "full", offset: int = 0) -> Any:
    """softmax(q kᵀ / √d_k, masked) v, computed in blocks of `block` keys: (..., n_q, d_v)."""
    return online(q, k, v, block, mask, offset).output


def _continued(
    running: Running, q: np.ndarray, k: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Copies of `running`'s m, l, o in q's float type, once they have _start()'s shapes for q, k, v."""
    want = (*np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]), q.shape[-2])
    if running.m.shape != want or running.l.shape != want or running.o.shape != (*want, v.shape[-1]):
        raise ValueError(f"running must hold m, l of shape {want} and o of {(*want, v.shape[-1])}, "
                         f"got {running.m.shape}, {running.l.shape}, {running.o.shape}")  # fmt: skip
    return running.m.astype(q.dtype), running.l.astype(q.dtype), running.o.astype(q.dtype)


def finished_weights(tiles: Tiles) -> np.ndarray:
    """The weights the blocks amount to, e^(s − m) / l with the final m and l, cell by cell: (..., n_q, n_k).

    Never held while attention runs (that is the point); the lesson builds it afterwards to show
    that every finished row is the plain softmax row."""
    m, ell = tiles.running.m[..., None], tiles.running.l[..., None]
    parts = [np.exp(step.scores - m) / ell for step in tiles.steps]  # (..., n_q, b) each
    return np.concatenate(parts, axis=-1)


# ---- the arithmetic, shared by steps() and online() --------------------------------------------


def _is_torch(x: Any) -> bool:
    return not isinstance(x, np.ndarray) and type(x).__module__.startswith("torch")


def _scores(q: np.ndarray, k: np.ndarray, d_k: int) -> np.ndarray:
    """q·k / √d_k for one block of keys (as app.attention divides: the same numbers)."""
    s: np.ndarray = q @ np.swapaxes(k, -1, -2)  # (..., r, b)
    s /= math.sqrt(d_k)
    return s


def _read(
    m: np.ndarray, ell: np.ndarray, o: np.ndarray, s: np.ndarray, v: np.ndarray, keep: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One block into the running numbers, in place: m, l (`ell`, ..., r) and o (..., r, d_v) from the block's
    scores s (..., r, b), −∞ where hidden, and its values v (..., b, d_v). Returns top, α and p (p is
    written over s unless `keep`)."""
    top = np.max(s, axis=-1)  # (..., r)
    new = np.maximum(m, top)  # (..., r) the new m
    # a query that has read no visible key yet (new = −∞) measures from 0 instead: its α and p are
    # then e^(−∞) = 0 and its l and o stay 0, where e^(−∞ − (−∞)) would be NaN
    base = np.where(np.isneginf(new), 0, new)  # (..., r)
    alpha = np.exp(m - base)  # (..., r) e^(m_old − m)
    p = np.subtract(s, base[..., None], out=None if keep else s)  # (..., r, b)
    np.exp(p, out=p)  # e^(s − m)
    ell *= alpha
    ell += np.add.reduce(p, axis=-1)
    o *= alpha[..., None]
    o += p @ v  # (..., r, d_v)
    m[...] = new
    return top, alpha, p


def _start(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """m = −∞, l = 0, o = 0 for every query (the leading axes of q, k and v broadcast)."""
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    n_q, d_v = q.shape[-2], v.shape[-1]
    m = np.full((*lead, n_q), -np.inf, dtype=q.dtype)
    return m, np.zeros((*lead, n_q), dtype=q.dtype), np.zeros((*lead, n_q, d_v), dtype=q.dtype)


def _checked(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, block: int, mask: Mask, offset: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, k, v as arrays of one float type (float32 if none is wider, else float64), once they fit."""
    q, k, v = (np.asarray(a) for a in (q, k, v))
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(f"q, k, v must be (..., n, d), got {q.ndim}-D, {k.ndim}-D, {v.ndim}-D")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same d_k, got {q.shape[-1]} and {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have one row per key, got {k.shape[-2]} and {v.shape[-2]}")
    if 0 in q.shape or 0 in k.shape or 0 in v.shape:
        raise ValueError(f"q, k, v must not be empty, got {q.shape}, {k.shape}, {v.shape}")
    np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])  # a ValueError unless they broadcast
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
        raise ValueError(f"block must be a whole number ≥ 1, got {block!r}")
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
        raise ValueError(f"offset must be a whole number ≥ 0, got {offset!r}")
    dtype = np.result_type(q.dtype, k.dtype, v.dtype, np.float32)
    dtype = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)
    return q.astype(dtype, copy=False), k.astype(dtype, copy=False), v.astype(dtype, copy=False)


# ---- the same arithmetic on torch tensors (online() and attend() only) ---------------------------


def _online_torch(q: Any, k: Any, v: Any, block: int, mask: Mask, offset: int, running: Running | None) -> Running:
    """online() for torch tensors: each line the torch form of the NumPy one above (_scores, _read)."""
    import torch

    _checked_torch(q, k, v, block, mask, offset)
    dtype = torch.promote_types(torch.promote_types(q.dtype, k.dtype), v.dtype)
    dtype = dtype if dtype in (torch.float32, torch.float64) else torch.float64
    q, k, v = (t.to(dtype) for t in (q, k, v))
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    n_q, d_k = q.shape[-2], q.shape[-1]
    if running is not None:
        want = (*lead, n_q)
        got = tuple(tuple(x.shape) for x in (running.m, running.l, running.o))
        if got != (want, want, (*want, v.shape[-1])):
            raise ValueError(f"running must hold m, l of shape {want} and o of {(*want, v.shape[-1])}, got {got}")
        m, ell, o = (
            torch.as_tensor(x).to(dtype=dtype, device=q.device, copy=True) for x in (running.m, running.l, running.o)
        )
    else:
        m = torch.full((*lead, n_q), -math.inf, dtype=dtype, device=q.device)
        ell = torch.zeros((*lead, n_q), dtype=dtype, device=q.device)
        o = torch.zeros((*lead, n_q, v.shape[-1]), dtype=dtype, device=q.device)
    for start, stop in blocks(k.shape[-2], block):
        first = 0 if mask == "full" else max(0, start - offset)
        if first >= n_q:
            break
        s = q[..., first:, :] @ k[..., start:stop, :].transpose(-1, -2)  # (..., n_q − first, b)
        s /= math.sqrt(d_k)
        if mask == "causal" and (part := min(n_q, stop - 1 - offset) - first) > 0:
            keys = torch.arange(start, stop, device=q.device)
            rows = torch.arange(first, first + part, device=q.device) + offset
            s[..., :part, :].masked_fill_(keys > rows[:, None], -math.inf)
        mm, ll, oo = m[..., first:], ell[..., first:], o[..., first:, :]
        top = torch.amax(s, dim=-1)
        new = torch.maximum(mm, top)
        base = torch.where(torch.isneginf(new), torch.zeros_like(new), new)
        alpha = torch.exp(mm - base)
        p = s.sub_(base[..., None]).exp_()  # e^(s − m), over the scores
        ll.mul_(alpha).add_(p.sum(dim=-1))
        oo.mul_(alpha[..., None]).add_(p @ v[..., start:stop, :])
        mm.copy_(new)
    return Running(m, ell, o)


def _checked_torch(q: Any, k: Any, v: Any, block: int, mask: Mask, offset: int) -> None:
    """_checked()'s rules for tensors (they keep their type and device)."""
    if q.dim() < 2 or k.dim() < 2 or v.dim() < 2:
        raise ValueError(f"q, k, v must be (..., n, d), got {q.dim()}-D, {k.dim()}-D, {v.dim()}-D")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"q, k, v do not fit: {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if 0 in (*q.shape, *k.shape, *v.shape):
        raise ValueError(f"q, k, v must not be empty, got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"block must be a whole number ≥ 1, got {block!r}")
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be a whole number ≥ 0, got {offset!r}")
