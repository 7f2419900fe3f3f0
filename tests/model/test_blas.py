"""app.model.blas: MKL's products against float64, in every layout the layers hand it, and NumPy's
where MKL is not wanted or the arrays do not suit it."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata

import numpy as np
import pytest

from app.model import blas

RNG = np.random.default_rng(7)
EPS = float(np.finfo(np.float32).eps)


def _mkl() -> None:
    if not blas.available():
        pytest.skip("the mkl extra is not installed")


def _close(got: np.ndarray, x: np.ndarray, b: np.ndarray) -> None:
    """got is x·b to float32's rounding: within a few eps of Σ|x||b| in each entry (a wrong layout is off by ~1)."""
    exact = x.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(x).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert got.shape == exact.shape and got.dtype == np.float32
    assert np.max(np.abs(got - exact) / scale) < 8 * EPS


def test_the_tests_extras_bring_mkl() -> None:
    """Where the mkl wheel is installed (the tests' extras install it), the products are MKL's:
    a library that failed to load would otherwise leave every check below skipped."""
    try:
        version = metadata.version("mkl")
    except metadata.PackageNotFoundError:
        pytest.skip("the mkl extra is not installed")
    assert blas.name() == f"MKL {version}"
    with blas.using("numpy"):
        assert blas.name().startswith("OpenBLAS")  # NumPy's wheels link OpenBLAS
    assert blas.name() == f"MKL {version}"  # as before the block


@pytest.mark.parametrize("rows", [2, 5, 150])
def test_a_weight_read_as_its_transpose(rows: int) -> None:
    """The Llama and BERT layers: W stored (out, in), laid out (in, out) or not, read as Wᵀ."""
    _mkl()
    x = RNG.standard_normal((rows, 576), dtype=np.float32)
    stored = RNG.standard_normal((960, 576), dtype=np.float32)
    for w in (stored, np.asfortranarray(stored)):
        _close(blas.matmul(x, w.T), x, w.T)
        _close(blas.matmul(x, w[128:704].T), x, w[128:704].T)  # a part of its rows (a written token's split)


def test_rows_of_a_larger_array_and_a_weight_stored_in_out() -> None:
    """GPT-2's Conv1D weight (in, out) as stored; x some rows of a wider block (its row stride > its width)."""
    _mkl()
    block = RNG.standard_normal((40, 700), dtype=np.float32)
    x = block[3:33, :576]  # (30, 576), rows 700 floats apart
    w = RNG.standard_normal((576, 1536), dtype=np.float32)
    _close(blas.matmul(x, w), x, w)
    _close(blas.matmul(x, w[:, 512:1024]), x, w[:, 512:1024])  # columns of a row-major matrix


def test_what_mkl_does_not_take_goes_to_numpy() -> None:
    """One row (OpenBLAS's matrix × vector is the quicker), float64, columns not side by side, and
    NumPy asked for: x @ b itself, the same bits."""
    _mkl()
    w = RNG.standard_normal((576, 300), dtype=np.float32)
    one = RNG.standard_normal((1, 576), dtype=np.float32)
    many = RNG.standard_normal((20, 576), dtype=np.float32)
    assert np.array_equal(blas.matmul(one, w), one @ w)
    wide = many.astype(np.float64)
    assert np.array_equal(blas.matmul(wide, w), wide @ w)
    strided = np.asfortranarray(many)  # x's numbers column by column: MKL is given rows side by side only
    assert np.array_equal(blas.matmul(strided, w), strided @ w)
    every_other = w[:, ::2]  # (576, 150), its numbers 2 apart in a row
    assert np.array_equal(blas.matmul(many, every_other), many @ every_other)
    with blas.using("numpy"):
        assert np.array_equal(blas.matmul(many, w), many @ w)
    _close(blas.matmul(many[:, ::2], w[::2]), many[:, ::2], w[::2])  # every other row of b: MKL's, its rows 600 apart


def test_workers_multiply_at_once() -> None:
    """Two threads' products side by side (the forward's two workers): each its own right answer."""
    _mkl()
    from app.model import nn

    xs = [RNG.standard_normal((150, 576), dtype=np.float32) for _ in range(4)]
    w = np.asfortranarray(RNG.standard_normal((3072, 576)), np.float32)
    for x, got in zip(xs, nn.parallel(lambda x: blas.matmul(x, w.T), xs), strict=True):
        _close(got, x, w.T)


def test_attention_blas_numpy_leaves_mkl_out() -> None:
    """The documented switch: a process started with ATTENTION_BLAS=numpy multiplies with NumPy's BLAS."""
    _mkl()
    code = "from app.model import blas; print(blas.name())"
    env = {**os.environ, "ATTENTION_BLAS": "numpy"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.startswith("OpenBLAS")


def test_without_the_extra_numpy_multiplies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain install (no mkl wheel): every product is NumPy's, and the name says which BLAS."""
    monkeypatch.setattr(blas, "_library", lambda: None)
    monkeypatch.setattr(blas, "_tried", False)
    monkeypatch.setattr(blas, "_mkl", None)
    x = RNG.standard_normal((150, 576), dtype=np.float32)
    w = np.asfortranarray(RNG.standard_normal((960, 576)), np.float32)
    assert np.array_equal(blas.matmul(x, w.T), x @ w.T)
    assert not blas.available() and blas.name().startswith("OpenBLAS")
