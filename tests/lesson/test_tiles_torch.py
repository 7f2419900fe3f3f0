"""app.lesson.tiles on torch tensors (the decoder's q, k, v with ATTENTION_BACKEND=torch, on a GPU when
there is one): online() and attend() give NumPy's numbers for the same q, k, v — any shape, block, mask
and key offset, grouped heads broadcast — in float64 and within float32's rounding in float32."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from app.attention import attention
from app.lesson import tiles
from tests.budget import examples

DEVICES = ["cpu", "cuda"]


def _torch(device: str) -> Any:
    """torch, imported by the tests that use it (not by every worker that collects this module: 1.5 s
    each, 4.5 s before its bytecode is written); a test on "cuda" skips where torch sees no GPU."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device here (torch.cuda.is_available() is False)")
    return torch


@st.composite
def grouped(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, str, int]:
    """q (kv, g, n_q, d) against k, v (kv, 1, n_k, d): a decoder's grouped heads reading its cache."""
    kv, g = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    n_q = draw(st.integers(1, 9))
    offset = draw(st.integers(0, 6))
    n_k = n_q + offset
    d_k, d_v = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    values = st.floats(-6, 6, allow_nan=False, allow_infinity=False)
    q = draw(arrays(np.float64, (kv, g, n_q, d_k), elements=values))
    k = draw(arrays(np.float64, (kv, 1, n_k, d_k), elements=values))
    v = draw(arrays(np.float64, (kv, 1, n_k, d_v), elements=values))
    return q, k, v, draw(st.integers(1, n_k + 2)), draw(st.sampled_from(["full", "causal"])), offset


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=examples(200, 40), deadline=None)
@given(case=grouped())
def test_torch_gives_numpys_numbers(device: str, case: tuple[np.ndarray, ...]) -> None:
    torch = _torch(device)
    q, k, v, block, mask, offset = case
    want = tiles.online(q, k, v, int(block), str(mask), int(offset) if mask == "causal" else 0)  # type: ignore[arg-type]
    tq, tk, tv = (torch.from_numpy(a).to(device) for a in (q, k, v))
    got = tiles.online(tq, tk, tv, int(block), str(mask), int(offset) if mask == "causal" else 0)  # type: ignore[arg-type]
    assert isinstance(got.o, torch.Tensor) and got.o.device.type == device and got.o.dtype == torch.float64
    for name in ("m", "l", "o"):
        np.testing.assert_allclose(getattr(got, name).cpu().numpy(), getattr(want, name), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_float32_heads_against_the_whole_table(device: str) -> None:
    """Nine query heads sharing three KV heads over 300 tokens in blocks of 128 (the last one short), as
    the decoder reads its prompt: within float32's rounding of the plain attention in float64."""
    torch = _torch(device)
    rng = np.random.default_rng(3)
    q = rng.normal(size=(3, 3, 300, 64)).astype(np.float32)
    k, v = (rng.normal(size=(3, 1, 300, 64)).astype(np.float32) for _ in range(2))
    tq, tk, tv = (torch.from_numpy(a).to(device) for a in (q, k, v))
    got = tiles.attend(tq, tk, tv, 128, "causal")
    assert got.dtype == torch.float32
    plain = attention(q.reshape(9, 300, 64), np.repeat(k[:, 0], 3, 0), np.repeat(v[:, 0], 3, 0), "causal").output
    np.testing.assert_allclose(got.cpu().numpy().reshape(9, 300, 64), plain, rtol=0, atol=2e-6)


def test_torch_refuses_what_numpy_refuses() -> None:
    torch = _torch("cpu")
    t = torch.zeros((4, 2))
    for bad in (0, True):
        with pytest.raises(ValueError, match="block"):
            tiles.online(t, t, t, bad)
    with pytest.raises(ValueError, match="mask"):
        tiles.online(t, t, t, 2, "sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="offset"):
        tiles.online(t, t, t, 2, "causal", -1)
    with pytest.raises(ValueError, match="do not fit"):
        tiles.online(t, torch.zeros((4, 3)), t, 2)
