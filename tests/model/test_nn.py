"""The NumPy building blocks against the exact formulas."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from app.model import nn
from app.model.nn import _tail, erf, gelu, gelu_tanh, layer_norm, merge_heads, split_heads


def test_erf_matches_math_erf() -> None:
    x = np.linspace(-6, 6, 20001)
    exact = np.array([math.erf(t) for t in x])
    assert np.abs(erf(x) - exact).max() < 1.5e-7
    assert erf(np.array([0.5], dtype=np.float32)).dtype == np.float32


def test_gelu_forms() -> None:
    x = np.linspace(-8, 8, 4001)
    exact = np.array([t * 0.5 * (1 + math.erf(t / math.sqrt(2))) for t in x])
    assert np.abs(gelu(x) - exact).max() < 1e-6
    assert np.abs(gelu_tanh(x) - exact).max() < 1e-3  # the tanh form is an approximation of the same curve
    assert gelu(np.zeros(3)).tolist() == [0, 0, 0]


def test_gelu_in_float32_as_the_forward_runs_it() -> None:
    """float32 in, float32 out, within 1e-6 of the exact curve (torch's own float32 GELU is within
    1.1e-6 here); far out on either side it is 0 and x, with no NaN from 0 · ∞."""
    x = np.linspace(-8, 8, 4001, dtype=np.float32)
    exact = np.array([t * 0.5 * (1 + math.erf(t / math.sqrt(2))) for t in x.astype(np.float64)])
    y = gelu(x)
    assert y.dtype == np.float32
    assert np.abs(y - exact).max() < 1e-6
    with np.errstate(over="ignore"):  # (|x|/√2)² overflows float32 for the last two
        far = gelu(np.array([-1e30, -50, 50, 1e30], dtype=np.float32))
    assert far.tolist() == [0, 0, 50, np.float32(1e30)]


def test_gelu_takes_max_x_0_as_x_plus_abs_x_halved_to_the_bit() -> None:
    """gelu makes max(x, 0) as (x + |x|)/2 (quicker than np.maximum): the same float32 numbers, ±0 and
    the far ends included, as the plain form max(x, 0) − |x|·tail(|x|/√2)/2."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(20_000) * 4).astype(np.float32)
    x[:8] = [0, -0.0, 1e-40, -1e-40, 60, -60, 1e30, -1e30]
    with np.errstate(over="ignore"):
        z = np.abs(x) * np.float32(1 / math.sqrt(2))
        plain = np.maximum(x, 0) - _tail(z, 1 / math.sqrt(2)) * z
        assert np.array_equal(gelu(x), plain)


@pytest.mark.parametrize("n", [5, 300, 600])  # one block of rows; one per core; more than one per core
def test_rows_each_joins_every_array_as_rows_does_in_one_hand_over(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.random.default_rng(n).standard_normal((n, 8)).astype(np.float32)
    calls: list[int] = []
    real = nn.parallel

    def counted(f: Any, items: Any) -> Any:
        calls.append(len(items))
        return real(f, items)

    monkeypatch.setattr(nn, "parallel", counted)
    doubled, sums = nn.rows_each(lambda r: [x[r] * 2, x[r].sum(axis=1)], n)
    assert len(calls) == 1 and calls[0] == len(nn.row_blocks(n))
    assert np.array_equal(doubled, x * 2) and np.array_equal(sums, nn.rows(lambda r: x[r].sum(axis=1), n))


def test_layer_norm() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(3, 2, (5, 8))
    y = layer_norm(x, np.ones(8), np.zeros(8), 1e-12)
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-12)
    np.testing.assert_allclose(y.std(-1), 1, atol=1e-9)


def test_layer_norm_in_float32_as_the_forward_runs_it() -> None:
    """float32 rows of a hidden state's size and spread, scaled and shifted: within float32's own
    rounding of the float64 formula, and float32 out."""
    rng = np.random.default_rng(1)
    x = rng.normal(0.5, 4, (173, 384)).astype(np.float32)
    w, b = (rng.normal(0, 1, 384).astype(np.float32) for _ in range(2))
    y = layer_norm(x, w, b, 1e-12)
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(-1, keepdims=True)
    exact = centred / np.sqrt((centred**2).mean(-1, keepdims=True) + 1e-12) * w + b
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, exact, atol=3e-6, rtol=0)


def test_split_and_merge_heads() -> None:
    x = np.arange(4 * 6).reshape(4, 6)  # 4 tokens, 3 heads of 2
    h = split_heads(x, 3)
    assert h.shape == (3, 4, 2) and h[1, 2].tolist() == [14, 15]
    assert (merge_heads(h) == x).all()
