"""The three classic mistakes, each stage against a plain float64 loop, and over HTTP."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.attention import attention
from app.lesson.mistakes import MISTAKES, Mistake, with_mistake


def loop_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: str, mistake: str) -> dict[str, np.ndarray]:
    """The mistakes written out cell by cell in plain Python floats (one head, n × d)."""
    n, d_k, d_v = len(q), len(q[0]), len(v[0])
    hidden = [[mask == "causal" and j > i for j in range(n)] for i in range(n)]
    scores = [[sum(float(q[i][t]) * float(k[j][t]) for t in range(d_k)) for j in range(n)] for i in range(n)]
    div = 1.0 if mistake == "no-scale" else math.sqrt(d_k)
    scaled = [[scores[i][j] / div for j in range(n)] for i in range(n)]
    if mistake == "mask-after-softmax":
        masked = [row[:] for row in scaled]
        weights = []
        for i in range(n):
            e = [math.exp(x - max(scaled[i])) for x in scaled[i]]
            weights.append([0.0 if hidden[i][j] else e[j] / sum(e) for j in range(n)])
    else:
        masked = [[-math.inf if hidden[i][j] else scaled[i][j] for j in range(n)] for i in range(n)]
        weights = [[0.0] * n for _ in range(n)]
        if mistake == "softmax-columns":
            for j in range(n):
                col = [masked[i][j] for i in range(n)]
                e = [math.exp(x - max(col)) for x in col]
                for i in range(n):
                    weights[i][j] = e[i] / sum(e)
        else:
            for i in range(n):
                e = [math.exp(x - max(masked[i])) for x in masked[i]]
                weights[i] = [x / sum(e) for x in e]
    output = [[sum(weights[i][j] * float(v[j][t]) for j in range(n)) for t in range(d_v)] for i in range(n)]
    return {
        "scores": np.array(scores),
        "scaled": np.array(scaled),
        "masked": np.array(masked),
        "weights": np.array(weights),
        "output": np.array(output),
    }


RNG = np.random.default_rng(7)
Q, K, V = RNG.normal(size=(5, 4)) * 2, RNG.normal(size=(5, 4)) * 2, RNG.normal(size=(5, 3))


@pytest.mark.parametrize("mistake", MISTAKES)
@pytest.mark.parametrize("mask", ["full", "causal"])
def test_each_mistake_against_a_plain_loop(mistake: Mistake, mask: str) -> None:
    got = with_mistake(Q, K, V, mask, mistake)  # type: ignore[arg-type]
    want = loop_reference(Q, K, V, mask, mistake)
    for name, a in want.items():
        np.testing.assert_allclose(getattr(got, name), a, rtol=1e-12, atol=1e-14, err_msg=name)


def test_what_each_mistake_breaks() -> None:
    right = attention(Q, K, V, "causal")
    no_scale = with_mistake(Q, K, V, "causal", "no-scale")
    np.testing.assert_array_equal(no_scale.scaled, right.scores)  # no ÷√d_k
    assert no_scale.weights[-1].max() > right.weights[-1].max()  # sharper
    cols = with_mistake(Q, K, V, "causal", "softmax-columns")
    np.testing.assert_allclose(cols.weights.sum(axis=0), 1.0, rtol=1e-12)  # columns sum to 1, rows do not
    assert not np.allclose(cols.weights.sum(axis=1), 1.0)
    after = with_mistake(Q, K, V, "causal", "mask-after-softmax")
    assert np.all(after.weights.sum(axis=1)[:-1] < 1) and math.isclose(after.weights.sum(axis=1)[-1], 1.0)
    assert np.all(after.weights[np.triu_indices(5, 1)] == 0) and not np.isinf(after.masked).any()
    full = with_mistake(Q, K, V, "full", "mask-after-softmax")  # with nothing hidden it is no mistake
    np.testing.assert_allclose(full.weights, attention(Q, K, V, "full").weights, rtol=1e-12)


def test_a_head_axis_is_kept() -> None:
    q = RNG.normal(size=(2, 4, 3))
    got = with_mistake(q, q, q, "causal", "softmax-columns")
    for h in range(2):
        np.testing.assert_allclose(got.weights[h], with_mistake(q[h], q[h], q[h], "causal", "softmax-columns").weights)


@pytest.mark.parametrize("mistake", MISTAKES)
def test_the_api_answers_with_the_mistake(client: TestClient, mistake: str) -> None:
    body = {"q": Q.tolist(), "k": K.tolist(), "v": V.tolist(), "mask": "causal", "mistake": mistake}
    r = client.post("/api/attention", json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["mistake"] == mistake
    want = loop_reference(Q, K, V, "causal", mistake)
    for name, a in want.items():
        shown = np.array([[-math.inf if x is None else x for x in row] for row in got[name]])
        np.testing.assert_allclose(shown, a, rtol=1e-12, atol=1e-14, err_msg=name)


def test_the_api_refuses_unknown_mistakes_and_sentences(client: TestClient) -> None:
    body = {"q": Q.tolist(), "k": K.tolist(), "v": V.tolist()}
    r = client.post("/api/attention", json={**body, "mistake": "no-softmax"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "mistake"]
    r = client.post("/api/attention", json={"sentence": "The cat sat.", "mistake": "no-scale"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "mistake"], r.text
