"""The RNN chapter: hidden states and ‖∂h_t/∂x_1‖₂ against independent float64 references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.attention import attention
from app.lesson import rnn


def _states(x: np.ndarray, w_h: np.ndarray, w_x: np.ndarray) -> np.ndarray:
    """h_t with plain Python loops over the entries: no matrix products."""
    d_h, d_x = w_x.shape
    h, prev = [], [0.0] * d_h
    for t in range(len(x)):
        pre = [sum(w_h[i][j] * prev[j] for j in range(d_h)) + sum(w_x[i][j] * x[t][j] for j in range(d_x))
               for i in range(d_h)]  # fmt: skip
        prev = [math.tanh(p) for p in pre]
        h.append(prev)
    return np.array(h)


def _finite_differences(x: np.ndarray, w_h: np.ndarray, w_x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """∂h_t/∂x_1 by central differences on x_1, every t at once: (n, d_h, d_x)."""
    n, d_x = x.shape
    jac = np.zeros((n, w_h.shape[0], d_x))
    for j in range(d_x):
        up, down = x.copy(), x.copy()
        up[0, j] += eps
        down[0, j] -= eps
        jac[:, :, j] = (_states(up, w_h, w_x) - _states(down, w_h, w_x)) / (2 * eps)
    return jac


LONG = ["the", "animal", "did", "not", "cross", "the", "street", "because", "it", "was", "too", "tired"]


@pytest.mark.parametrize("words", [list(rnn.DEFAULT_WORDS), LONG, ["a", "b"]])
def test_jacobian_norms_match_finite_differences(words: list[str]) -> None:
    r = rnn.run(words)
    w = rnn.weights()
    np.testing.assert_allclose(r.h, _states(r.x, w.w_h, w.w_x), rtol=0, atol=1e-14)
    fd = _finite_differences(r.x, w.w_h, w.w_x)
    np.testing.assert_allclose(r.jacobians, fd, rtol=0, atol=1e-8)
    # the spectral norm, from the singular values of the finite-difference Jacobians
    fd_norms = [np.linalg.svd(j, compute_uv=False)[0] for j in fd]
    np.testing.assert_allclose(r.influence, fd_norms, rtol=1e-6, atol=1e-10)


def test_the_first_word_fades() -> None:
    r = rnn.run()
    assert np.all(np.diff(r.influence) < 0)  # seeded weights: it only fades on the default words
    assert r.influence[0] == pytest.approx(0.6537118836199723, abs=1e-12)  # pinned
    assert r.influence[-1] < r.influence[0] / 5


def test_same_word_same_x() -> None:
    x = rnn.word_vectors(["cat", "the", "cat"], rnn.D_X)
    np.testing.assert_array_equal(x[0], x[2])
    assert not np.allclose(x[0], x[1])


def test_api(client: TestClient) -> None:
    r = client.post("/api/rnn", json={"words": ["the", "cat", "ate", "its", "fish"]})
    assert r.status_code == 200
    d = r.json()
    assert d["rnn_steps"] == 5 and d["attention_steps"] == 1 and d["norm"] == "spectral"
    x, w_h, w_x = np.array(d["x"]), np.array(d["w_h"]), np.array(d["w_x"])
    np.testing.assert_allclose(d["h"], _states(x, w_h, w_x), atol=1e-14)
    fd = _finite_differences(x, w_h, w_x)
    np.testing.assert_allclose(d["influence"], [np.linalg.norm(j, 2) for j in fd], rtol=1e-6)
    # attention on the same x, by the engine, against a plain softmax
    q, k = x @ np.array(d["w_q"]), x @ np.array(d["w_k"])
    s = q @ k.T / math.sqrt(x.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(d["weights"], e / e.sum(axis=1, keepdims=True), atol=1e-15)
    assert d["last_to_first"] == d["weights"][-1][0]
    assert d["weights"] == attention(q, k, x @ np.array(d["w_v"])).weights.tolist()


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"words": ["one"]}, ["body", "words"]),
        ({"words": ["w"] * 65}, ["body", "words"]),
        ({"words": ["two words", "b"]}, ["body", "words", 0]),
        ({"words": ["a", "x" * 25]}, ["body", "words", 1]),
        ({"words": ["a", ""]}, ["body", "words", 1]),
        ({"words": "the cat"}, ["body", "words"]),
        ({"extra": 1}, ["body", "extra"]),
    ],
)
def test_bad_input(client: TestClient, body: object, loc: list[object]) -> None:
    r = client.post("/api/rnn", json=body)
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == loc
    assert r.json()["detail"][0]["msg"].startswith(str(loc[1]))
