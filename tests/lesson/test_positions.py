"""The word-order chapter: the permutation property, the sinusoids, and the real model."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.attention import attention
from app.lesson import positions
from app.lesson.rnn import word_vectors


def _sinusoid_loop(n: int, d: int) -> list[list[float]]:
    rows = []
    for pos in range(n):
        row = []
        for j in range(d):
            angle = pos / 10000 ** ((j - j % 2) / d)  # 2i = j rounded down to even
            row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
        rows.append(row)
    return rows


@pytest.mark.parametrize(("n", "d"), [(5, 8), (12, 8), (50, 384)])
def test_sinusoid_formula(n: int, d: int) -> None:
    np.testing.assert_allclose(positions.sinusoid(n, d), _sinusoid_loop(n, d), rtol=0, atol=1e-12)


def test_permutation_matrix() -> None:
    x = np.arange(12.0).reshape(4, 3)
    p = positions.permutation_matrix([2, 0, 3, 1])
    np.testing.assert_array_equal(p @ x, x[[2, 0, 3, 1]])


@pytest.mark.parametrize("order", list(itertools.permutations(range(5)))[1::7])
def test_without_positions_the_same_numbers_exactly(order: tuple[int, ...]) -> None:
    t = positions.toy(list(positions.DEFAULT_WORDS), list(order))
    # exactly: each weight of the reordered sentence is the very same float, moved
    for i, j in itertools.product(range(5), repeat=2):
        assert t.plain_perm[i, j] == t.plain[order[i], order[j]]
    assert t.plain_gap == 0.0
    if list(order) != list(range(5)):
        assert t.encoded_gap > 1e-3  # with positions, they change


def test_the_toy_is_attention() -> None:
    """The order-free arithmetic gives app.attention's weights (within rounding)."""
    words = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"]
    x = word_vectors(words, positions.D_MODEL) + positions.sinusoid(len(words), positions.D_MODEL)
    w_q, w_k = positions.projections()
    want = attention(x @ w_q, x @ w_k, x).weights
    np.testing.assert_allclose(positions.weights_of(x, w_q, w_k), want, rtol=0, atol=1e-15)


def test_api_toy(client: TestClient) -> None:
    d = client.post("/api/positions", json={"model": False}).json()
    assert d["words_perm"] == ["the", "fish", "ate", "its", "cat"] and d["model"] is None
    plain, perm = np.array(d["plain"]), np.array(d["plain_perm"])
    p = np.zeros((5, 5))
    p[range(5), d["order"]] = 1
    assert np.array_equal(perm, p @ plain @ p.T) and d["plain_gap"] == 0
    assert d["encoded_gap"] == pytest.approx(
        np.abs(np.array(d["encoded_perm"]) - p @ np.array(d["encoded"]) @ p.T).max()
    )
    np.testing.assert_allclose(d["pe"], _sinusoid_loop(5, 8), atol=1e-12)


def test_api_model_sees_the_order(client: TestClient) -> None:
    d = client.post("/api/positions", json={"layer": 0, "head": 2}).json()
    m = d["model"]
    assert m["tokens"] == ["[CLS]", "the", "cat", "ate", "its", "fish", "[SEP]"]
    assert m["tokens_perm"] == ["[CLS]", "the", "fish", "ate", "its", "cat", "[SEP]"]
    assert m["token_order"] == [0, 1, 5, 3, 4, 2, 6]
    assert m["ids"] == [101, 1996, 4937, 8823, 2049, 3869, 102] and m["ids_perm"] == [
        101,
        1996,
        3869,
        8823,
        2049,
        4937,
        102,
    ]
    w, wp = np.array(m["weights"]), np.array(m["weights_perm"])
    np.testing.assert_allclose(w.sum(axis=1), 1, atol=1e-12)
    moved = w[np.ix_(m["token_order"], m["token_order"])]
    assert m["gap"] == pytest.approx(np.abs(wp - moved).max(), abs=1e-15)
    assert m["gap"] > 0.5  # a head that looks at a neighbour: it follows the position, not the word
    assert np.array(m["gaps"]).shape == (6, 12) and min(map(min, m["gaps"])) > 1e-3


def test_api_model_against_sentence_mode(client: TestClient) -> None:
    """The chapter's table is the model's own head, as POST /api/attention's sentence mode shows it."""
    m = client.post("/api/positions", json={"layer": 3, "head": 1}).json()["model"]
    ref = client.post("/api/attention", json={"sentence": "the fish ate its cat", "layer": 3, "head": 1}).json()
    np.testing.assert_allclose(m["weights_perm"], ref["weights"], atol=1e-12)


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"order": [0, 1, 2, 3]}, ["body", "order"]),
        ({"order": [0, 1, 2, 3, 3]}, ["body", "order"]),
        ({"order": [0, 1, 2, 3, 5]}, ["body", "order"]),
        ({"layer": 6}, ["body", "layer"]),
        ({"layer": -1}, ["body", "layer"]),
        ({"head": 12}, ["body", "head"]),
        ({"words": ["x"] * 13}, ["body", "words"]),
        ({"words": ["solo"]}, ["body", "words"]),
        ({"words": ["a", "b c"]}, ["body", "words", 1]),
        ({"model": "yes"}, ["body", "model"]),
    ],
)
def test_bad_input(client: TestClient, body: object, loc: list[object]) -> None:
    r = client.post("/api/positions", json=body)
    assert r.status_code == 422, r.json()
    assert r.json()["detail"][0]["loc"] == loc


def test_a_class_on_one_order_runs_the_model_once(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every phone of a class opens the chapter on the same words and order: the model runs for the first."""
    runs: list[list[str]] = []
    model = positions.model

    def counted(*args: Any) -> Any:
        runs.append(list(args[1]))
        return model(*args)

    monkeypatch.setattr(positions, "model", counted)
    body = {"words": ["a", "class", "reads", "one", "order"], "order": [4, 1, 2, 3, 0], "head": 5}
    answers = {client.post("/api/positions", json=body).content for _ in range(4)}
    assert len(answers) == 1 and runs == [body["words"]]
    client.post("/api/positions", json={**body, "head": 6})
    assert len(runs) == 2
