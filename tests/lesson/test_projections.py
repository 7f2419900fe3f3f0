"""The projections chapter: the decoder example's X, W_Q, W_K, W_V (NumPy's seed 42 recipe) and their products,
against a plain loop."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

from app.examples import EXAMPLES


def _product(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    return [[sum(a[i][m] * b[m][j] for m in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def test_the_examples_random_recipe(client: TestClient) -> None:
    d = client.get("/api/projections").json()
    np.random.seed(42)  # the example's own recipe, in its order
    x = np.random.randn(4, 8)
    w_q, w_k, w_v = np.random.randn(8, 8), np.random.randn(8, 8), np.random.randn(8, 8)
    for name, want in (("x", x), ("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        assert d[name] == want.tolist(), name
    assert d["tokens"] == ["SELECT", "*", "FROM", "customers"]


def test_products_against_a_plain_loop(client: TestClient) -> None:
    d = client.get("/api/projections").json()
    for out, w in (("q", "w_q"), ("k", "w_k"), ("v", "w_v")):
        np.testing.assert_allclose(d[out], _product(d["x"], d[w]), rtol=0, atol=1e-13)
    # the same q, k, v the select-from-customers example serves
    e = EXAMPLES[d["example"]]
    assert d["q"] == e.q.tolist() and d["k"] == e.k.tolist() and d["v"] == e.v.tolist()
    assert abs(d["q"][0][0] - (-2.0997360469890194)) < 1e-12  # pinned
