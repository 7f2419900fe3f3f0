"""Attention in blocks of keys (app.lesson.tiles.attend) against the whole n×n table, one head.

    .venv/bin/python -m bench.tiles

For n = 512, 2,048 and 4,096 tokens (d = 64, SmolLM2's head size), causal, blocks of 128, each row the
same work (one head's output, softmax(q kᵀ/√d, causal) v) in the same run, rounds interleaved so that
the machine's other work falls on every row alike:

  plain    NumPy with the whole table: scores, −∞ above the diagonal, softmax, × v (as app.attention,
           output only)
  tiles    app.lesson.tiles.attend, blocks of 128 (a causal query skips the blocks after it)
  sdpa     torch.nn.functional.scaled_dot_product_attention(is_causal=True) on the CPU

in float64 and float32: the median time of each, the ratio tiles / plain and tiles / sdpa, and the
peak of NumPy's allocations (tracemalloc) for plain and tiles. Numbers depend on the machine: the
ratios and the peaks are what to compare.
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Callable
from functools import partial

import numpy as np

from app.lesson import tiles

D, BLOCK, ROUNDS = 64, 128, 7
SIZES = (512, 2048, 4096)


def plain(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    n = q.shape[0]
    s = q @ k.T / np.sqrt(q.shape[1]).astype(q.dtype)  # (n, n)
    s[np.triu_indices(n, 1)] = -np.inf
    s -= s.max(axis=1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=1, keepdims=True)
    out: np.ndarray = s @ v
    return out


def peak(f: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        f()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    import torch

    rng = np.random.default_rng(0)
    print(f"one head, d = {D}, causal, blocks of {BLOCK}; median of {ROUNDS} rounds (ms); NumPy's peak (MiB)")
    print("dtype    n      plain    tiles     sdpa   tiles/plain  tiles/sdpa   peak plain  peak tiles")
    for dtype in (np.float64, np.float32):
        for n in SIZES:
            q, k, v = (rng.standard_normal((n, D)).astype(dtype) for _ in range(3))
            tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
            sdpa = torch.nn.functional.scaled_dot_product_attention
            rows: dict[str, Callable[[], object]] = {
                "plain": partial(plain, q, k, v),
                "tiles": partial(tiles.attend, q, k, v, BLOCK, "causal"),
                "sdpa": partial(sdpa, tq, tk, tv, is_causal=True),
            }
            ref = plain(q, k, v)
            tol = 1e-12 if dtype == np.float64 else 1e-4
            assert np.abs(tiles.attend(q, k, v, BLOCK, "causal") - ref).max() < tol
            times: dict[str, list[float]] = {name: [] for name in rows}
            for _ in range(ROUNDS):
                for name, f in rows.items():
                    t0 = time.perf_counter()
                    f()
                    times[name].append(time.perf_counter() - t0)
            ms = {name: statistics.median(t) * 1000 for name, t in times.items()}
            peaks = [peak(rows[name]) / 2**20 for name in ("plain", "tiles")]
            print(
                f"{np.dtype(dtype).name:8} {n:5} {ms['plain']:8.2f} {ms['tiles']:8.2f} {ms['sdpa']:8.2f}"
                f"   {ms['tiles'] / ms['plain']:10.2f}× {ms['tiles'] / ms['sdpa']:10.2f}×"
                f"   {peaks[0]:10.1f} {peaks[1]:11.1f}"
            )


if __name__ == "__main__":
    main()
