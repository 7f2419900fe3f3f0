"""The small building blocks of both forward passes (float32 in, float32 out), in NumPy, and the
same operations in torch (TorchOps) for ATTENTION_BACKEND=torch, on a GPU when there is one.

References:
  Ba et al., "Layer Normalization" (2016).
  Hendrycks & Gimpel, "Gaussian Error Linear Units (GELUs)" (2016): GELU(x) = x·Φ(x).
  Abramowitz & Stegun, Handbook of Mathematical Functions (1964), 7.1.26: erf to 1.5e-7.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from app.attention import Backend, Mask, visible
from app.model.weights import Weights

# Abramowitz & Stegun 7.1.26: erf(x) = 1 − (a1 t + … + a5 t⁵) e^(−x²), t = 1/(1 + p x), x ≥ 0.
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, |error| ≤ 1.5e-7 (NumPy has none; scipy is not a dependency).

    Computed in x's dtype with in-place steps: the FFN applies it to n × 1536 numbers a layer.
    """
    a = np.abs(x)  # (…)
    t = a * _P
    t += 1.0
    np.reciprocal(t, out=t)  # t = 1 / (1 + p·|x|)
    poly = t * _A[4]
    for coef in (_A[3], _A[2], _A[1], _A[0]):  # Horner: (((a5 t + a4) t + a3) t + a2) t + a1, then · t
        poly += coef
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)  # e^(−x²)
    poly *= a
    np.subtract(1.0, poly, out=poly)  # erf(|x|)
    out: np.ndarray = np.copysign(poly, x, out=poly)
    return out


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)): BERT's hidden_act "gelu"."""
    y = erf(x * x.dtype.type(1 / math.sqrt(2)))
    y += 1.0
    y *= x
    y *= 0.5
    return y


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GPT-2's "gelu_new": x/2·(1 + tanh(√(2/π)·(x + 0.044715 x³)))."""
    y: np.ndarray = x * x
    y *= 0.044715
    y += 1.0
    y *= x  # x + 0.044715 x³
    y *= math.sqrt(2 / math.pi)
    np.tanh(y, out=y)
    y += 1.0
    y *= x
    y *= 0.5
    return y


ACTIVATIONS = {"gelu": gelu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "gelu_fast": gelu_tanh}


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """Normalise each row to mean 0, variance 1 (biased), then scale and shift."""
    mean = x.mean(axis=-1, keepdims=True)  # (n, 1)
    centred = x - mean  # (n, C)
    var = (centred * centred).mean(axis=-1, keepdims=True)  # (n, 1)
    out: np.ndarray = centred / np.sqrt(var + np.float32(eps)) * weight + bias  # (n, C)
    return out


def split_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """(n, h·d) → (h, n, d): the columns of head i are i·d … (i+1)·d − 1."""
    n, width = x.shape
    return np.ascontiguousarray(x.reshape(n, heads, width // heads).transpose(1, 0, 2))  # (h, n, d)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(h, n, d) → (n, h·d), the inverse of split_heads."""
    h, n, d = x.shape
    return np.ascontiguousarray(x.transpose(1, 0, 2).reshape(n, h * d))  # (n, h·d)


_ROWS = 128  # tokens per block of the feed-forward network: its n × 4C activations then stay in cache


def by_rows(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """A row-wise function f applied to blocks of rows of x (n, C) and joined: the same numbers, less
    memory traffic (a 300-token sentence's feed-forward is about 15% quicker)."""
    if x.shape[0] <= _ROWS:
        return f(x)
    return np.concatenate([f(x[i : i + _ROWS]) for i in range(0, x.shape[0], _ROWS)])  # (n, ·)


_CHUNK_CELLS = 256 * 1024  # h·n² per step of attend(): a group's n × n scores then stay in a core's cache (2 MB)


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Mask) -> np.ndarray:
    """softmax(q kᵀ / √d_k) v for (h, n, d) float32 heads: each head's output, in float32, as torch's does.

    The forward pass needs nothing more of attention, so it keeps no stage: the stages a view
    shows are app.attention's, in float64, recomputed from the trace's q, k, v for the shown head.
    A few heads at a time, so that each group's n × n scores stay in the CPU cache.
    """
    h, n, d_k = q.shape
    out = np.empty((h, n, v.shape[-1]), dtype=np.float32)  # (h, n, d_v)
    scale = np.float32(1 / math.sqrt(d_k))
    hidden = ~visible(n) if mask == "causal" else None  # (n, n)
    step = max(1, _CHUNK_CELLS // (n * n))
    for i in range(0, h, step):
        g = slice(i, i + step)
        s = q[g] @ np.swapaxes(k[g], -1, -2)  # (step, n, n) scores
        s *= scale
        if hidden is not None:
            s[:, hidden] = -np.inf
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)  # weights
        np.matmul(s, v[g], out=out[g])  # (step, n, d_v)
    return out


class NumpyOps:
    """The forward pass's array operations in NumPy: the functions above."""

    name: Backend = "numpy"

    def weights(self, w: Weights) -> Mapping[str, Any]:
        return w

    def array(self, a: np.ndarray) -> Any:
        return a

    def numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def layer_norm(self, x: Any, weight: Any, bias: Any, eps: float) -> Any:
        return layer_norm(x, weight, bias, eps)

    def activation(self, name: str) -> Callable[[Any], Any]:
        return ACTIVATIONS[name]

    def split_heads(self, x: Any, heads: int) -> Any:
        return split_heads(x, heads)

    def merge_heads(self, x: Any) -> Any:
        return merge_heads(x)

    def by_rows(self, f: Callable[[Any], Any], x: Any) -> Any:
        return by_rows(f, x)

    def attend(self, q: Any, k: Any, v: Any, mask: Mask) -> Any:
        return attend(q, k, v, mask)


class TorchOps(NumpyOps):
    """The same operations in torch, on the GPU when torch sees one (CUDA), else on the CPU.

    torch is imported when this is first made: only for ATTENTION_BACKEND=torch.
    """

    name: Backend = "torch"

    def __init__(self) -> None:
        import torch
        import torch.nn.functional as F

        self.torch, self.F = torch, F
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self._weights: dict[int, tuple[Weights, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def weights(self, w: Weights) -> Mapping[str, Any]:
        """The model's weights as tensors on the device, copied there once per model."""
        with self._lock:
            if id(w) not in self._weights:  # the pair keeps w alive, so its id is not reused
                self._weights[id(w)] = (w, {name: self.array(a) for name, a in w.items()})
            return self._weights[id(w)][1]

    def array(self, a: np.ndarray) -> Any:
        return self.torch.from_numpy(np.array(a, dtype=np.float32)).to(self.device)

    def numpy(self, a: Any) -> np.ndarray:
        out: np.ndarray = a.cpu().numpy()
        return out

    def layer_norm(self, x: Any, weight: Any, bias: Any, eps: float) -> Any:
        return self.F.layer_norm(x, (x.shape[-1],), weight, bias, eps)

    def activation(self, name: str) -> Callable[[Any], Any]:
        exact = ACTIVATIONS[name] is gelu
        return lambda x: self.F.gelu(x, approximate="none" if exact else "tanh")

    def split_heads(self, x: Any, heads: int) -> Any:
        n, width = x.shape
        return x.reshape(n, heads, width // heads).transpose(0, 1).contiguous()  # (h, n, d)

    def merge_heads(self, x: Any) -> Any:
        h, n, d = x.shape
        return x.transpose(0, 1).reshape(n, h * d)  # (n, h·d)

    def by_rows(self, f: Callable[[Any], Any], x: Any) -> Any:
        return f(x)

    def attend(self, q: Any, k: Any, v: Any, mask: Mask) -> Any:
        return self.F.scaled_dot_product_attention(q, k, v, is_causal=mask == "causal")  # (h, n, d_v)


_ops: dict[Backend, NumpyOps] = {}
_ops_lock = threading.Lock()


def ops(backend: Backend) -> NumpyOps:
    """The operations of a backend (one TorchOps per process: it holds the weights on the device)."""
    if backend not in ("numpy", "torch"):
        raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")
    with _ops_lock:
        if backend not in _ops:
            _ops[backend] = TorchOps() if backend == "torch" else NumpyOps()
        return _ops[backend]
