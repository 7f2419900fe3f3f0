"""An independent float64 reference: attention written as the plain loops of the formula."""

from __future__ import annotations

import math

import numpy as np


def attention_loops(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> dict[str, np.ndarray]:
    """One head, (n, d) arrays; every stage built one number at a time with math.fsum."""
    n, d_k = q.shape
    d_v = v.shape[1]
    scores = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            scores[i, j] = math.fsum(q[i, c] * k[j, c] for c in range(d_k))
    scaled = scores / math.sqrt(d_k)
    masked = scaled.copy()
    weights = np.zeros((n, n))
    output = np.zeros((n, d_v))
    for i in range(n):
        seen = [j for j in range(n) if not causal or j <= i]
        for j in range(n):
            if j not in seen:
                masked[i, j] = -math.inf
        top = max(scaled[i, j] for j in seen)
        exps = {j: math.exp(scaled[i, j] - top) for j in seen}
        total = math.fsum(exps.values())
        for j in seen:
            weights[i, j] = exps[j] / total
        for c in range(d_v):
            output[i, c] = math.fsum(weights[i, j] * v[j, c] for j in range(n))
    return {"scores": scores, "scaled": scaled, "masked": masked, "weights": weights, "output": output}
