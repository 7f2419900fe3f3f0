"""A long sentence's attention without its n × n table (app.lod): the level-of-detail summary against
the whole table in float64 (app.attention, and float64 loops for small ones), the focused rows equal
to the whole table's rows, and the memory it holds."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from app import lod
from app.attention import attention
from app.examples import EXAMPLES
from tests.budget import examples
from tests.reference import attention_loops

CAT = EXAMPLES["the-cat-ate-its-fish"]
SUMMARY_ATOL = 1e-5  # the summary is float32 (as the model's q and k): its numbers within this of float64's


def _blocks_of(weights: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The summary's mean and peak, cell by cell from the whole table (float64)."""
    b = len(edges) - 1
    cells = [[weights[edges[a] : edges[a + 1], edges[c] : edges[c + 1]] for c in range(b)] for a in range(b)]
    mean = np.array([[cell.sum(axis=1).mean() for cell in row] for row in cells])
    peak = np.array([[cell.max() for cell in row] for row in cells])
    return mean, peak


def _check(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: str, block: int, top: int) -> None:
    q32, k32, v32 = (a.astype(np.float32) for a in (q, k, v))
    q64, k64, v64 = (a.astype(np.float64) for a in (q32, k32, v32))
    whole = attention(q64, k64, v64, mask)  # type: ignore[arg-type]
    n = q.shape[0]
    s = lod.summarize(q32, k32, v32, mask, block, top)  # type: ignore[arg-type]
    assert s.edges.tolist() == [*range(0, n, block), n]
    mean, peak = _blocks_of(whole.weights, s.edges)
    np.testing.assert_allclose(s.mean, mean, rtol=0, atol=SUMMARY_ATOL)
    np.testing.assert_allclose(s.peak, peak, rtol=0, atol=SUMMARY_ATOL)
    np.testing.assert_allclose(s.mean.sum(axis=1), 1, rtol=0, atol=1e-5)  # a row of blocks sums to 1
    kept = min(top, n)
    assert s.top_keys.shape == s.top_weights.shape == (n, kept)
    for i in range(n):
        seen = i + 1 if mask == "causal" else n
        want = np.sort(whole.weights[i, :seen])[::-1][:kept]  # the strongest weights of the row
        got = s.top_weights[i, : len(want)]
        np.testing.assert_allclose(got, want, rtol=0, atol=SUMMARY_ATOL)
        keys = s.top_keys[i, : len(want)]
        np.testing.assert_allclose(whole.weights[i, keys], got, rtol=0, atol=SUMMARY_ATOL)  # each key's own weight
        assert len(set(keys.tolist())) == len(keys) and (keys < seen).all() and (keys >= 0).all()
        assert (s.top_keys[i, len(want) :] == -1).all() and (s.top_weights[i, len(want) :] == 0).all()
    which = sorted({0, n - 1, n // 2, *range(max(0, n // 2 - 2), min(n, n // 2 + 3))})
    r = lod.rows(q32, k32, v32, mask, which)  # type: ignore[arg-type]
    for name in ("scores", "scaled", "masked", "weights", "output"):
        np.testing.assert_allclose(getattr(r, name), getattr(whole, name)[which], rtol=1e-12, atol=1e-13)
    assert (np.isneginf(r.masked) == np.isneginf(whole.masked[which])).all()


@st.composite
def heads(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, str, int, int]:
    n = draw(st.integers(1, 40))
    d_k, d_v = draw(st.integers(1, 8)), draw(st.integers(1, 5))
    values = st.floats(-3, 3, allow_nan=False, allow_infinity=False, width=32)
    q = draw(arrays(np.float32, (n, d_k), elements=values))
    k = draw(arrays(np.float32, (n, d_k), elements=values))
    v = draw(arrays(np.float32, (n, d_v), elements=values))
    return q, k, v, draw(st.sampled_from(["full", "causal"])), draw(st.integers(1, n)), draw(st.integers(1, 10))


@settings(max_examples=examples(300, 60), deadline=None)
@given(heads())
def test_the_summary_and_the_rows_equal_the_whole_table(case: tuple[np.ndarray, ...]) -> None:
    """Random heads of 1 … 40 tokens, any block (dividing n or not), both masks, any K."""
    q, k, v, mask, block, top = case
    _check(q, k, v, str(mask), int(block), int(top))


@pytest.mark.parametrize("mask", ["full", "causal"])
def test_long_heads_in_several_tiles(mask: str) -> None:
    """600 tokens: several tiles of queries and of keys in pass 2 (TILE_ROWS, TILE), blocks of 7 that
    cross the tiles' edges, and a block as large as the sentence."""
    rng = np.random.default_rng(42)
    q, k, v = (rng.normal(0, 1.5, size=(600, 16)) for _ in range(3))
    _check(q, k, v, mask, 7, 8)
    s = lod.summarize(q, k, v, mask, 600)  # type: ignore[arg-type]
    assert s.edges.tolist() == [0, 600] and s.mean.tolist() == [[pytest.approx(1, abs=1e-6)]]


def test_the_lessons_example_against_float64_loops() -> None:
    """The cat ate its fish in blocks of 2 ([the, cat], [ate, its], [fish]) under both masks: the summary
    against the plain loops of the formula; "its" reads "cat" most (0.895), as chapter 3 shows."""
    for mask in ("full", "causal"):
        loops = attention_loops(CAT.q, CAT.k, CAT.v, causal=mask == "causal")
        s = lod.summarize(CAT.q, CAT.k, CAT.v, mask, 2, 3)
        mean, peak = _blocks_of(loops["weights"], s.edges)
        np.testing.assert_allclose(s.mean, mean, rtol=0, atol=1e-6)
        np.testing.assert_allclose(s.peak, peak, rtol=0, atol=1e-6)
        r = lod.rows(CAT.q, CAT.k, CAT.v, mask, [3, 4])
        np.testing.assert_allclose(r.weights, loops["weights"][[3, 4]], rtol=0, atol=1e-15)
        np.testing.assert_allclose(r.output, loops["output"][[3, 4]], rtol=0, atol=1e-15)
    full = lod.summarize(CAT.q, CAT.k, CAT.v, "full", 2, 3)
    assert full.top_keys[3].tolist() == [1, 4, 3] and round(float(full.top_weights[3, 0]), 3) == 0.895
    assert lod.summarize(CAT.q, CAT.k, CAT.v, "causal", 2, 3).top_keys[0].tolist() == [0, -1, -1]


def test_default_blocks() -> None:
    """At most 16 blocks a side by default (4,096 tokens in blocks of 256); any number when asked."""
    assert lod.default_block(4096) == 256 and lod.default_block(600) == 38 and lod.default_block(20) == 2
    assert lod.default_block(4096, 32) == 128 and lod.block_edges(4096, 128).tolist() == list(range(0, 4097, 128))
    assert lod.block_edges(600, 38)[-2:].tolist() == [570, 600] and len(lod.block_edges(600, 38)) == 17


def test_what_is_refused() -> None:
    q = np.zeros((5, 2))
    for block in (0, 6, -1):
        with pytest.raises(ValueError, match="block must be 1 … 5"):
            lod.summarize(q, q, q, "full", block)
    with pytest.raises(ValueError, match="rows must be 0 … 4"):
        lod.rows(q, q, q, "causal", [0, 5])
    with pytest.raises(ValueError, match="mask"):
        lod.summarize(q, q, q, "sideways", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one head"):
        lod.summarize(np.zeros((2, 5, 2)), q, q, "full", 2)


def _peak(n: int) -> int:
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(n, 64)).astype(np.float32) for _ in range(3))
    tracemalloc.start()
    try:
        lod.summarize(q, k, v, "causal")
        lod.rows(q, k, v, "causal", list(range(n // 2, n // 2 + 16)))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_grows_with_n_not_n_squared() -> None:
    """Twice the tokens, about twice the memory (the whole table would be four times): the tiles
    (256 × 256), arrays of n × B and n × K, and the rows' float64 copies of q, k, v (n × d). At 2,048
    tokens under 6 MiB, where the table of float32 weights alone would be 16 MiB."""
    small, large = _peak(1024), _peak(2048)
    assert large < 2.5 * small, (small, large)
    assert large < 6 << 20, f"{large / 2**20:.1f} MiB"
