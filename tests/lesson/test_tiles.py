"""Tiled attention with an online softmax (app.lesson.tiles): the lesson's numbers at every block, by
hand; the plain attention (app.attention), float64 loops and torch's own attention for random q, k, v
of many shapes, blocks and masks; float32 within float32's rounding; memory that never holds n × n."""

from __future__ import annotations

import math
import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from app.attention import attention
from app.examples import EXAMPLES
from app.lesson import tiles
from tests.budget import examples
from tests.reference import attention_loops

CAT = EXAMPLES["the-cat-ate-its-fish"]
R2 = math.sqrt(2)  # √d_k of the lesson's 2-D vectors
e = math.exp
INF = math.inf


Numbers = tuple[float, float, float, float, list[float]]  # top, α, m, l, o of one query after a block


def _step_numbers(t: tiles.Tiles, row: int) -> list[Numbers]:
    return [(s.top[row], s.alpha[row], s.m[row], s.l[row], s.o[row].tolist()) for s in t.steps]


def _same(got: list[Numbers], want: list[Numbers]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for a, b in zip((*g[:4], *g[4]), (*w[:4], *w[4]), strict=True):
            assert a == pytest.approx(b, rel=1e-14, abs=1e-15), (got, want)


# ---- the lesson's numbers, block by block, by hand ---------------------------------------------


def test_its_reads_cat_in_the_first_block_and_m_never_moves_again() -> None:
    """The query "its" (q = [2, 0]) scores 0, 6, 0, 1, 2 against the five keys, ÷√2; blocks of 2: [the, cat],
    [ate, its], [fish]. Cat's 6/√2 = 4.243 comes first, so α = 1 at the later blocks."""
    t = tiles.steps(CAT.q, CAT.k, CAT.v, block=2)
    assert [(s.start, s.stop) for s in t.steps] == [(0, 2), (2, 4), (4, 5)]
    m = 6 / R2
    l1 = e(0 - m) + e(m - m)  # the, cat
    o1 = [e(0 - m) * 0 + 1 * 1, 0.0]  # v_the = [0, 0], v_cat = [1, 0]
    l2 = l1 + e(0 - m) + e(1 / R2 - m)  # ate, its
    o2 = [o1[0] + e(1 / R2 - m) * 0.3, e(0 - m) * 0.5]  # v_ate = [0, 0.5], v_its = [0.3, 0]
    l3 = l2 + e(2 / R2 - m)  # fish
    o3 = [o2[0], o2[1] + e(2 / R2 - m) * 1]  # v_fish = [0, 1]
    _same(_step_numbers(t, 3), [(m, 0.0, m, l1, o1), (1 / R2, 1.0, m, l2, o2), (2 / R2, 1.0, m, l3, o3)])
    assert np.round(t.output[3], 3).tolist() == [0.903, 0.059]  # the lesson's z for "its"
    assert np.round(tiles.finished_weights(t)[3], 3).tolist() == [0.013, 0.895, 0.013, 0.026, 0.053]


def test_fish_meets_a_bigger_score_in_the_second_block() -> None:
    """The query "fish" (q = [0, 1.5]) scores 0, 0 in the first block, then 4.5/√2 = 3.182 at "ate": m grows,
    and the l and o kept so far are multiplied by α = e^(0 − 3.182) = 0.0415."""
    t = tiles.steps(CAT.q, CAT.k, CAT.v, block=2)
    m1, m2 = 0.0, 4.5 / R2
    alpha = e(m1 - m2)
    l1, o1 = 2.0, [1.0, 0.0]  # e^0 · v_the + e^0 · v_cat
    l2 = alpha * l1 + e(m2 - m2) + e(0 - m2)  # ate, its
    o2 = [alpha * o1[0] + e(0 - m2) * 0.3, alpha * o1[1] + 1 * 0.5]
    l3 = l2 + e(0.75 / R2 - m2)  # fish: 0.75 / √2
    o3 = [o2[0], o2[1] + e(0.75 / R2 - m2)]
    _same(_step_numbers(t, 4), [(0.0, 0.0, m1, l1, o1), (m2, alpha, m2, l2, o2), (0.75 / R2, 1.0, m2, l3, o3)])
    assert round(alpha, 4) == 0.0415
    np.testing.assert_allclose(t.output[4], attention(CAT.q, CAT.k, CAT.v).output[4], rtol=0, atol=1e-15)


def test_causal_cat_skips_the_blocks_after_it() -> None:
    """Under the causal mask "cat" sees "the" and itself (scores 0 and 0): the later blocks leave its
    numbers as they were (top = −∞, α = 1, p = 0) and it splits 50 / 50."""
    t = tiles.steps(CAT.q, CAT.k, CAT.v, block=2, mask="causal")
    later: Numbers = (-INF, 1.0, 0.0, 2.0, [1.0, 0.0])  # top = −∞, α = 1: nothing changes
    _same(_step_numbers(t, 1), [(0.0, 0.0, 0.0, 2.0, [1.0, 0.0]), later, later])
    assert t.steps[1].p[1].tolist() == [0.0, 0.0] and t.steps[1].scores[1].tolist() == [-INF, -INF]
    assert t.output[1].tolist() == [0.5, 0.0]
    assert tiles.finished_weights(t)[1].tolist() == [0.5, 0.5, 0.0, 0.0, 0.0]


def test_a_block_that_does_not_divide_n_leaves_a_short_last_block() -> None:
    assert tiles.blocks(5, 2) == [(0, 2), (2, 4), (4, 5)]
    assert tiles.blocks(5, 5) == [(0, 5)]
    assert tiles.blocks(5, 7) == [(0, 5)]
    assert tiles.blocks(4096, 128)[-1] == (3968, 4096) and len(tiles.blocks(4096, 128)) == 32
    for b in range(1, 7):
        np.testing.assert_allclose(
            tiles.attend(CAT.q, CAT.k, CAT.v, b), attention(CAT.q, CAT.k, CAT.v).output, atol=1e-15
        )


def test_memory_counts() -> None:
    """The lesson's 5 words in blocks of 2: 10 scores at once instead of 25; 4,096 tokens in blocks of
    128: 524,288 instead of 16,777,216 (32 times fewer), as float32 2 MiB instead of 64 MiB."""
    assert tiles.held(5, 5, 2, 2) == tiles.Held(tile=10, table=25, running=20)
    long = tiles.held(4096, 4096, 128, 64)
    assert (long.tile, long.table, long.running) == (524_288, 16_777_216, 4096 * 66)
    assert long.tile * 4 == 2 << 20 and long.table * 4 == 64 << 20
    assert tiles.held(5, 5, 9, 2).tile == 25  # a block past n is one block of n


# ---- random q, k, v: the plain attention, float64 loops, torch ------------------------------------


@st.composite
def problems(draw: st.DrawFn, heads: bool = False, square: bool = True) -> tuple[np.ndarray, ...]:
    h = (draw(st.integers(1, 3)),) if heads else ()
    n_q = draw(st.integers(1, 9))
    n_k = n_q if square else draw(st.integers(1, 12))
    d_k, d_v = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    values = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
    q = draw(arrays(np.float64, (*h, n_q, d_k), elements=values))
    k = draw(arrays(np.float64, (*h, n_k, d_k), elements=values))
    v = draw(arrays(np.float64, (*h, n_k, d_v), elements=values))
    return q, k, v


def _plain(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, offset: int) -> np.ndarray:
    """torch's scaled_dot_product_attention with the mask written out (query i sees keys ≤ offset + i)."""
    import torch

    seen = None
    if causal:
        seen = torch.from_numpy(np.arange(k.shape[-2])[None, :] <= np.arange(q.shape[-2])[:, None] + offset)
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    out: np.ndarray = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=seen).numpy()
    return out


def _close(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@settings(max_examples=examples(80, 30), deadline=None)
@given(problems(), st.integers(1, 11), st.sampled_from(["full", "causal"]))
def test_equals_the_plain_attention_and_float64_loops(arrs: tuple[np.ndarray, ...], block: int, mask: str) -> None:
    q, k, v = arrs
    plain = attention(q, k, v, mask)  # type: ignore[arg-type]
    loops = attention_loops(q, k, v, causal=mask == "causal")
    t = tiles.steps(q, k, v, block, mask)  # type: ignore[arg-type]
    lean = tiles.attend(q, k, v, block, mask)  # type: ignore[arg-type]
    for out in (t.output, lean):
        _close(out, plain.output)
        _close(out, loops["output"])
    _close(tiles.finished_weights(t), plain.weights)
    # the recorded blocks are the scaled, masked scores cell for cell (−∞ in the same cells; the matrix
    # library may round a product of a block in its last bit otherwise), m each row's largest so far
    scores = np.concatenate([s.scores for s in t.steps], axis=-1)
    np.testing.assert_array_equal(np.isneginf(scores), np.isneginf(plain.masked))
    _close(np.nan_to_num(scores, neginf=0), np.nan_to_num(plain.masked, neginf=0))
    for s in t.steps:
        _close(s.m, np.max(plain.masked[..., : s.stop], axis=-1))
        assert np.all((s.alpha >= 0) & (s.alpha <= 1)) and np.all((s.p >= 0) & (s.p <= 1))


@settings(max_examples=examples(60, 25), deadline=None)
@given(
    st.booleans().flatmap(lambda h: problems(heads=h, square=False)),
    st.integers(1, 13),
    st.sampled_from(["full", "causal"]),
    st.integers(0, 12),
)
def test_any_shape_block_mask_and_key_offset_against_torch(
    arrs: tuple[np.ndarray, ...], block: int, mask: str, offset: int
) -> None:
    """q of n_q rows against n_k keys; causal with an offset: query i stands at offset + i (a decoder's
    new tokens against its cache)."""
    q, k, v = arrs
    ref = _plain(q, k, v, mask == "causal", offset)
    run = tiles.online(q, k, v, block, mask, offset)  # type: ignore[arg-type]
    _close(run.output, ref)
    t = tiles.steps(q, k, v, block, mask, offset)  # type: ignore[arg-type]
    _close(t.output, ref)
    # the skipped blocks change nothing; a score's last bit may (online() multiplies only the rows that see
    # a block, and BLAS may sum a dot product in another order for fewer rows: 1 ulp in a fresh clone's run)
    _close(t.running.m, run.m)
    np.testing.assert_allclose(t.running.l, run.l, rtol=1e-13)


def test_heads_and_grouped_queries_broadcast() -> None:
    """(h, n, d) arrays are each head on its own; grouped-query attention: 6 query heads over 2 KV
    heads as q (2, 3, n, d) against k, v (2, 1, n, d)."""
    rng = np.random.default_rng(42)
    q, k, v = rng.standard_normal((6, 40, 8)), rng.standard_normal((2, 40, 8)), rng.standard_normal((2, 40, 5))
    grouped = tiles.attend(q.reshape(2, 3, 40, 8), k[:, None], v[:, None], 16, "causal")  # (2, 3, 40, 5)
    each = attention(q, np.repeat(k, 3, axis=0), np.repeat(v, 3, axis=0), "causal").output
    _close(grouped.reshape(6, 40, 5), each)


@settings(max_examples=examples(60, 25), deadline=None)
@given(st.booleans().flatmap(lambda h: problems(heads=h, square=False)), st.integers(1, 13), st.integers(0, 12))
def test_float32_within_float32_rounding(arrs: tuple[np.ndarray, ...], block: int, offset: int) -> None:
    """float32 in, float32 arithmetic and out, within the rounding float32 allows: a score is off by
    at most about (d_k + 2)·ε·Σ|q_c k_c|/√d_k, which moves a weighted mean of the values by at most
    twice that times max |v|; the sums over n keys add n·ε·max |v|."""
    q, k, v = (a.astype(np.float32) for a in arrs)
    out = tiles.attend(q, k, v, block, "causal", offset)
    assert out.dtype == np.float32 and tiles.steps(q, k, v, block).output.dtype == np.float32
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))  # the same numbers, in float64
    ref = _plain(q64, k64, v64, True, offset)
    eps = float(np.finfo(np.float32).eps)
    d_k, n_k = q.shape[-1], k.shape[-2]
    spread = float((np.abs(q64)[..., :, None, :] * np.abs(k64)[..., None, :, :]).sum(-1).max()) / math.sqrt(d_k)
    vmax = float(np.abs(v64).max())
    bound = eps * (2 * (d_k + 2) * spread + n_k + 4) * vmax
    assert np.abs(out - ref).max() <= bound


# ---- memory ------------------------------------------------------------------------------------------


def test_memory_grows_with_n_not_n_squared() -> None:
    """2,048 queries and keys, blocks of 128: the most held at once (NumPy's allocations as tracemalloc
    sees them) stays near one block's scores, far below the 2,048 × 2,048 table the plain way holds."""
    rng = np.random.default_rng(7)
    n, d, b = 2048, 64, 128
    q, k, v = (rng.standard_normal((n, d)) for _ in range(3))
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        tiles.attend(q, k, v, b, "causal")
        tiled = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        attention(q, k, v, "causal")
        plain = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    block_bytes = n * b * 8  # one block's scores (2 MiB); its e^(s − m) is written over them
    running = n * (2 + d) * 8 * 2  # m, l, o and the output
    assert tiled <= 2 * block_bytes + running, (tiled, block_bytes)
    assert plain >= n * n * 8 and tiled * 4 < plain  # the plain way holds the 32 MiB table, several times


# ---- refused ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"block": 0}, "block"),
        ({"block": -2}, "block"),
        ({"block": 2.0}, "block"),
        ({"block": True}, "block"),
        ({"mask": "diagonal"}, "mask"),
        ({"offset": -1}, "offset"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"block": 2, "mask": "full", "offset": 0, **kwargs}
    for f in (tiles.steps, tiles.attend):
        with pytest.raises(ValueError, match=message):
            f(CAT.q, CAT.k, CAT.v, **args)


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((2, 3), (2, 4), (2, 3)), "same d_k"),
        (((2, 3), (2, 3), (3, 3)), "one row per key"),
        (((3,), (3,), (3,)), "must be"),
        (((2, 0), (2, 0), (2, 1)), "must not be empty"),
        (((2, 2, 3), (3, 2, 3), (3, 2, 3)), "broadcast"),
    ],
)
def test_bad_shapes_are_refused(shapes: tuple[tuple[int, ...], ...], message: str) -> None:
    q, k, v = (np.ones(s) for s in shapes)
    with pytest.raises(ValueError, match=message):
        tiles.attend(q, k, v, 2)
