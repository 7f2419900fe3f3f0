"""The engine: the seeds' numbers, an independent float64 loop, and torch's own attention."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from app.attention import STAGES, all_finite, attention, default_backend, visible
from app.examples import EXAMPLES
from tests.budget import examples
from tests.reference import attention_loops

CAT = EXAMPLES["the-cat-ate-its-fish"]
SQL = EXAMPLES["select-from-customers"]
ITS, CAT_ROW = 3, 1


def test_its_looks_at_cat_with_the_seed_numbers() -> None:
    s = attention(CAT.q, CAT.k, CAT.v)
    assert s.scores[ITS].tolist() == [0, 6, 0, 1, 2]
    assert np.round(s.scaled[ITS], 2).tolist() == [0.0, 4.24, 0.0, 0.71, 1.41]
    assert np.round(s.weights[ITS], 3).tolist() == [0.013, 0.895, 0.013, 0.026, 0.053]
    assert np.round(s.output[ITS], 3).tolist() == [0.903, 0.059]
    assert s.masked is s.scaled  # nothing hidden under the full mask


def test_causal_cat_splits_fifty_fifty() -> None:
    s = attention(CAT.q, CAT.k, CAT.v, mask="causal")
    assert s.weights[CAT_ROW].tolist() == [0.5, 0.5, 0.0, 0.0, 0.0]
    assert s.masked[CAT_ROW, 2:].tolist() == [-math.inf] * 3
    assert np.isneginf(s.masked).sum() == 10  # the strict upper triangle of 5 × 5


def _seed_000_recipe() -> tuple[np.ndarray, np.ndarray]:
    """The decoder demo as the lesson's notes write it: global seed, -1e9 for hidden keys, rounded print."""
    np.random.seed(42)
    x = np.random.randn(4, 8)
    w_q, w_k, w_v = np.random.randn(8, 8), np.random.randn(8, 8), np.random.randn(8, 8)
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    scores = q @ k.T / np.sqrt(8)
    scores = np.where(np.tril(np.ones((4, 4))) == 0, -1e9, scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights, weights @ v


def test_select_from_customers_reproduces_seed_000() -> None:
    s = attention(SQL.q, SQL.k, SQL.v, mask=SQL.mask)
    printed, output = _seed_000_recipe()
    assert np.array_equal(np.round(s.weights, 3), np.round(printed, 3))
    np.testing.assert_allclose(s.weights, printed, rtol=0, atol=1e-15)
    np.testing.assert_allclose(s.output, output, rtol=1e-13, atol=1e-13)
    # What the seed's script prints, pinned so a change in the recipe cannot pass silently:
    assert np.round(s.weights, 3).tolist() == [
        [1.0, 0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [0.996, 0.0, 0.004, 0.0],
        [0.001, 0.937, 0.016, 0.046],
    ]


@st.composite
def qkv(draw: st.DrawFn, heads: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    h = (draw(st.integers(1, 3)),) if heads else ()
    n, d_k, d_v = draw(st.integers(1, 7)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    values = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
    q = draw(arrays(np.float64, (*h, n, d_k), elements=values))
    k = draw(arrays(np.float64, (*h, n, d_k), elements=values))
    v = draw(arrays(np.float64, (*h, n, d_v), elements=values))
    return q, k, v


def _close(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@settings(max_examples=examples(60, 25), deadline=None)
@given(qkv(), st.sampled_from(["full", "causal"]))
def test_single_head_matches_float64_loops(arrs: tuple[np.ndarray, ...], mask: str) -> None:
    q, k, v = arrs
    s = attention(q, k, v, mask=mask)  # type: ignore[arg-type]
    ref = attention_loops(q, k, v, causal=mask == "causal")
    for name in STAGES:
        _close(getattr(s, name), ref[name])


@settings(max_examples=examples(40, 20), deadline=None)
@given(qkv(heads=True), st.sampled_from(["full", "causal"]))
def test_multi_head_is_each_head_on_its_own(arrs: tuple[np.ndarray, ...], mask: str) -> None:
    q, k, v = arrs
    s = attention(q, k, v, mask=mask)  # type: ignore[arg-type]
    for head in range(q.shape[0]):
        ref = attention_loops(q[head], k[head], v[head], causal=mask == "causal")
        for name in STAGES:
            assert getattr(s, name).shape[0] == q.shape[0]
            _close(getattr(s, name)[head], ref[name])


@settings(max_examples=examples(60, 25), deadline=None)
@given(st.booleans().flatmap(lambda h: qkv(heads=h)), st.sampled_from(["full", "causal"]))
def test_matches_torch_scaled_dot_product_attention(arrs: tuple[np.ndarray, ...], mask: str) -> None:
    import torch

    q, k, v = arrs
    causal = mask == "causal"
    s = attention(q, k, v, mask=mask)  # type: ignore[arg-type]
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    _close(s.output, torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).numpy())
    # torch's own softmax of torch's own scaled, masked scores
    scaled = (tq @ tk.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        scaled = scaled.masked_fill(~torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool).tril(), -math.inf)
    _close(s.weights, torch.softmax(scaled, dim=-1).numpy())


@settings(max_examples=examples(40, 20), deadline=None)
@given(st.booleans().flatmap(lambda h: qkv(heads=h)), st.sampled_from(["full", "causal"]))
def test_torch_backend_gives_the_numpy_numbers(arrs: tuple[np.ndarray, ...], mask: str) -> None:
    q, k, v = arrs
    a = attention(q, k, v, mask=mask, backend="numpy")  # type: ignore[arg-type]
    b = attention(q, k, v, mask=mask, backend="torch")  # type: ignore[arg-type]
    for name in STAGES:
        np.testing.assert_array_equal(np.isneginf(getattr(a, name)), np.isneginf(getattr(b, name)))
        _close(np.nan_to_num(getattr(a, name), neginf=0), np.nan_to_num(getattr(b, name), neginf=0))


@settings(max_examples=examples(60, 25), deadline=None)
@given(st.booleans().flatmap(lambda h: qkv(heads=h)))
def test_causal_rows_sum_to_one_and_hide_exactly_the_future(arrs: tuple[np.ndarray, ...]) -> None:
    q, k, v = arrs
    s = attention(q, k, v, mask="causal")
    n = q.shape[-2]
    hidden = ~visible(n)
    assert np.all(s.weights[..., hidden] == 0.0)
    assert np.all(np.isneginf(s.masked[..., hidden]))
    assert np.all(np.isfinite(s.masked[..., ~hidden]))
    np.testing.assert_allclose(s.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert np.all(s.weights >= 0)
    np.testing.assert_array_equal(s.scaled, s.scores / math.sqrt(q.shape[-1]))


def test_large_scores_do_not_overflow_softmax() -> None:
    q = np.array([[1e150, 0.0], [0.0, 1.0]])
    k = np.array([[1e150, 0.0], [-1e150, 0.0]])
    s = attention(q, k, np.eye(2))
    assert np.isfinite(s.weights).all()
    assert s.weights[0].tolist() == [1.0, 0.0]


def test_stages_are_read_only() -> None:
    s = attention(CAT.q, CAT.k, CAT.v)
    for name in STAGES:
        with pytest.raises(ValueError, match="read-only"):
            getattr(s, name)[0, 0] = 1.0


@pytest.mark.parametrize(
    "numbers",
    [
        [1.0, -2.0, 3.5],
        [1e308, 1e308, -1e308],  # every number finite, though their sum overflows
        [1.0, math.inf, 2.0],
        [-math.inf, 1.0],
        [math.inf, -math.inf],  # a sum of NaN
        [1.0, math.nan],
        [1e308, 1e308, math.nan],
    ],
)
def test_all_finite_is_isfinite_all(numbers: list[float]) -> None:
    for shape in ((len(numbers),), (1, len(numbers)), (len(numbers), 1, 1)):
        a = np.array(numbers).reshape(shape)
        assert all_finite(a) is bool(np.isfinite(a).all())


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        (((2, 3), (2, 4), (2, 3)), "same shape"),
        (((2, 3), (2, 3), (3, 3)), "one row per token"),
        (((2, 3), (2, 3), (1, 2, 3)), "must all be 2-D or all 3-D"),
        (((3,), (3,), (3,)), "must all be 2-D or all 3-D"),
        (((2, 0), (2, 0), (2, 1)), "must not be empty"),
    ],
)
def test_bad_shapes_are_refused(shapes: tuple[tuple[int, ...], ...], message: str) -> None:
    q, k, v = (np.ones(s) for s in shapes)
    with pytest.raises(ValueError, match=message):
        attention(q, k, v)


def test_unknown_mask_and_backend_are_refused() -> None:
    with pytest.raises(ValueError, match="mask"):
        attention(CAT.q, CAT.k, CAT.v, mask="diagonal")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="backend"):
        attention(CAT.q, CAT.k, CAT.v, backend="jax")  # type: ignore[arg-type]


def test_default_backend_is_numpy_without_a_gpu() -> None:
    import torch

    assert default_backend() == ("torch" if torch.cuda.is_available() else "numpy")
