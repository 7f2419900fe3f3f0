"""Scaled dot-product self-attention, one named stage at a time.

References:
  Vaswani et al., "Attention Is All You Need" (2017), section 3.2.1:
      Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V
  app/examples.py: the lesson's worked examples, whose numbers the tests check.

The product exists to show the stages, so every one is returned by name:

  scores   Q Kᵀ                       how well each key answers each query
  scaled   scores / √d_k              keeps softmax out of its flat, saturated ends
  masked   scaled, −∞ where hidden    "causal": a query never sees a later key
  weights  softmax(masked), by row    positive, and every row sums to 1
  output   weights V                  each query's weighted mix of the values

attention() returns them together; stages() yields them one at a time, as each is computed.

Shapes: q and k are (n, d_k), v is (n, d_v) for one head, or (h, n, d) with a leading
head axis, which every stage keeps. Arithmetic is float64. NumPy always works; torch is used
when asked for (and by "auto" when a CUDA GPU is present), and gives the same numbers.
This module imports nothing from the web side of the app.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

Mask = Literal["full", "causal"]
Backend = Literal["numpy", "torch"]
MASKS: tuple[Mask, ...] = ("full", "causal")
STAGES = ("scores", "scaled", "masked", "weights", "output")
# The classic mistakes app.lesson.mistakes computes (named here, where the API's models can see them)
Mistake = Literal["no-scale", "softmax-columns", "mask-after-softmax"]
MISTAKES: tuple[Mistake, ...] = ("no-scale", "softmax-columns", "mask-after-softmax")


@dataclass(frozen=True)
class Stages:
    """Every stage of one attention computation, as read-only float64 arrays."""

    scores: np.ndarray
    scaled: np.ndarray
    masked: np.ndarray
    weights: np.ndarray
    output: np.ndarray

    def __post_init__(self) -> None:
        for name in STAGES:
            getattr(self, name).setflags(write=False)

    def as_dict(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in STAGES}


def visible(n: int) -> np.ndarray:
    """The causal pattern: True where query i may see key j, i.e. j <= i."""
    return np.tri(n, dtype=bool)  # (n, n), lower triangle and diagonal


def check_shapes(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
    """Raise ValueError unless q, k, v are one head (n, d) or h heads (h, n, d) that fit together."""
    if q.ndim not in (2, 3) or k.ndim != q.ndim or v.ndim != q.ndim:
        raise ValueError(f"q, k, v must all be 2-D or all 3-D, got {q.ndim}-D, {k.ndim}-D, {v.ndim}-D")
    if q.shape != k.shape:
        raise ValueError(f"q and k must have the same shape, got {q.shape} and {k.shape}")
    if v.shape[:-1] != q.shape[:-1]:
        raise ValueError(f"v must have one row per token like q, got {v.shape} for q {q.shape}")
    if 0 in q.shape or 0 in v.shape:
        raise ValueError(f"q, k, v must not be empty, got q {q.shape} and v {v.shape}")


def all_finite(a: np.ndarray) -> bool:
    """Whether every number of a is finite (np.isfinite(a).all()), in one pass when it is: a sum is
    ∞ or NaN whenever a holds an ∞ or a NaN, so a finite sum says all is well; only a sum that is not
    (a NaN, an ∞, or finite numbers whose sum overflowed) is read number by number. One NumPy call
    instead of two: on a 5-token request each call costs a few microseconds (bench/api.py)."""
    return math.isfinite(np.add.reduce(a, axis=None)) or bool(np.isfinite(a).all())


def _float64(a: np.ndarray) -> np.ndarray:
    """a as a float64 array: a itself when it is one already (the API's arrays always are)."""
    return a if type(a) is np.ndarray and a.dtype == np.float64 else np.asarray(a, dtype=np.float64)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Mask = "full", backend: Backend = "numpy") -> Stages:
    """All stages of softmax(q kᵀ / √d_k) v. See the module docstring for names and shapes."""
    return Stages(**dict(stages(q, k, v, mask, backend)))


def stages(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Mask = "full", backend: Backend = "numpy"
) -> Iterator[tuple[str, np.ndarray]]:
    """The stages as (name, array) in order, each as soon as it is computed.

    Arguments are checked at the call; a stage is never changed after it has been yielded,
    so a caller may send it on while the next one is computed.
    """
    q, k, v = (_float64(a) for a in (q, k, v))
    check_shapes(q, k, v)
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")
    if backend not in ("numpy", "torch"):
        raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")
    return _stages_torch(q, k, v, mask) if backend == "torch" else _stages_numpy(q, k, v, mask)


def _stages_numpy(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Mask) -> Iterator[tuple[str, np.ndarray]]:
    n, d_k = q.shape[-2], q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2)  # (..., n, n)
    yield "scores", scores
    scaled = scores / math.sqrt(d_k)  # (..., n, n)
    yield "scaled", scaled
    masked = np.where(visible(n), scaled, -np.inf) if mask == "causal" else scaled  # (..., n, n)
    yield "masked", masked
    # Stable softmax: shift each row by its maximum, which is finite because the diagonal
    # is never hidden, so exp() only sees values <= 0 and hidden keys get exactly 0.
    weights = masked - np.maximum.reduce(masked, axis=-1, keepdims=True)  # (..., n, n)
    np.exp(weights, out=weights)  # in place: one n×n buffer, not three
    weights /= np.add.reduce(weights, axis=-1, keepdims=True)
    yield "weights", weights
    yield "output", weights @ v  # (..., n, d_v)


def _stages_torch(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Mask) -> Iterator[tuple[str, np.ndarray]]:
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    tq, tk, tv = (torch.from_numpy(a).to(device) for a in (q, k, v))
    n, d_k = q.shape[-2], q.shape[-1]
    scores = tq @ tk.transpose(-1, -2)  # (..., n, n)
    yield "scores", scores.cpu().numpy()
    scaled = scores / math.sqrt(d_k)  # (..., n, n)
    yield "scaled", scaled.cpu().numpy()
    if mask == "causal":
        hidden = ~torch.ones(n, n, dtype=torch.bool, device=device).tril()
        masked = scaled.masked_fill(hidden, -math.inf)  # (..., n, n)
    else:
        masked = scaled
    yield "masked", masked.cpu().numpy()
    weights = torch.softmax(masked, dim=-1)  # (..., n, n)
    yield "weights", weights.cpu().numpy()
    yield "output", (weights @ tv).cpu().numpy()  # (..., n, d_v)


def torch_available() -> bool:
    """Whether torch is installed (found without importing it: importing torch takes about a second)."""
    return importlib.util.find_spec("torch") is not None


# Where a GPU driver announces itself: NVIDIA's kernel module, and AMD's (ROCm builds of torch
# answer torch.cuda too). Without either, torch cannot see a GPU, so there is no need to import it.
GPU_DRIVER_FILES = ("/proc/driver/nvidia/version", "/dev/kfd")


def gpu_driver_present() -> bool:
    return any(os.path.exists(f) for f in GPU_DRIVER_FILES)


def default_backend() -> Backend:
    """torch when it is installed and sees a CUDA GPU, NumPy otherwise.

    torch is imported only when a GPU driver is present (the server's start would otherwise
    spend a second importing torch to learn that there is no GPU).
    """
    if torch_available() and gpu_driver_present():
        import torch

        if torch.cuda.is_available():
            return "torch"
    return "numpy"
