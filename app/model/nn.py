"""The small building blocks of both forward passes, in NumPy (float32 in, float32 out).

References:
  Ba et al., "Layer Normalization" (2016).
  Hendrycks & Gimpel, "Gaussian Error Linear Units (GELUs)" (2016): GELU(x) = x·Φ(x).
  Abramowitz & Stegun, Handbook of Mathematical Functions (1964), 7.1.26: erf to 1.5e-7.
"""

from __future__ import annotations

import math

import numpy as np

# Abramowitz & Stegun 7.1.26: erf(x) = 1 − (a1 t + … + a5 t⁵) e^(−x²), t = 1/(1 + p x), x ≥ 0.
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, |error| ≤ 1.5e-7 (NumPy has none; scipy is not a dependency)."""
    a = np.abs(x)
    t = 1.0 / (1.0 + _P * a)
    poly = t * (_A[0] + t * (_A[1] + t * (_A[2] + t * (_A[3] + t * _A[4]))))
    y = 1.0 - poly * np.exp(-a * a)
    out: np.ndarray = np.copysign(y, x).astype(x.dtype, copy=False)
    return out


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)): BERT's hidden_act "gelu"."""
    return x * 0.5 * (1.0 + erf(x * np.float32(1 / math.sqrt(2))))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GPT-2's "gelu_new": x/2·(1 + tanh(√(2/π)·(x + 0.044715 x³)))."""
    return 0.5 * x * (1.0 + np.tanh(np.float32(math.sqrt(2 / math.pi)) * (x + 0.044715 * x**3)))


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
