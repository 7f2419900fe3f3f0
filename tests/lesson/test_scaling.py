"""The √d_k chapter: the spread of q·k, and softmax with and without the division."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.lesson import scaling


def _draws(d_k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng([scaling.SEED, d_k])  # the documented order of the draws
    q = rng.standard_normal((scaling.SAMPLES, d_k))
    k = rng.standard_normal((scaling.SAMPLES, d_k))
    queries = rng.standard_normal((scaling.QUERIES, d_k))
    keys = rng.standard_normal((scaling.KEYS, d_k))
    return q, k, queries, keys


def _softmax_loop(scores: list[float]) -> list[float]:
    top = max(scores)
    e = [math.exp(s - top) for s in scores]
    total = math.fsum(e)
    return [v / total for v in e]


def _entropy_loop(w: list[float]) -> float:
    return -math.fsum(p * math.log(p) for p in w if p > 0)


@pytest.mark.parametrize("d_k", [2, 3, 64, 1024])
def test_spread_is_sqrt_d_k(d_k: int) -> None:
    s = scaling.measure(d_k)
    q, k, _, _ = _draws(d_k)
    dots = [math.fsum(a * b for a, b in zip(qi, ki, strict=True)) for qi, ki in zip(q[:256], k[:256], strict=True)]
    np.testing.assert_allclose(s.dots[:256], dots, rtol=1e-12, atol=1e-12)
    mean = math.fsum(s.dots) / len(s.dots)
    assert s.std == pytest.approx(math.sqrt(math.fsum((v - mean) ** 2 for v in s.dots) / len(s.dots)), rel=1e-12)
    # the variance of a sum of d_k unit products is d_k; the std of the sample std is ≈ σ/√(2·samples)
    se = 1 / math.sqrt(2 * scaling.SAMPLES)
    assert abs(s.std / math.sqrt(d_k) - 1) < 4 * se * math.sqrt(2)  # a product of normals has kurtosis 9, not 3


def test_pinned() -> None:
    assert scaling.measure(64).std == pytest.approx(8.102374973972166, abs=1e-9)


@pytest.mark.parametrize("d_k", [2, 16, 512, 1024])
def test_softmax_against_a_loop(d_k: int) -> None:
    s = scaling.measure(d_k)
    _, _, queries, keys = _draws(d_k)
    scores = [math.fsum(a * b for a, b in zip(queries[0], key, strict=True)) for key in keys]
    unscaled, scaled = _softmax_loop(scores), _softmax_loop([v / math.sqrt(d_k) for v in scores])
    np.testing.assert_allclose(s.scores, scores, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(s.unscaled, unscaled, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(s.scaled, scaled, rtol=1e-9, atol=1e-15)
    assert s.max_unscaled == pytest.approx(max(unscaled), rel=1e-9)
    assert s.max_scaled == pytest.approx(max(scaled), rel=1e-9)
    assert s.entropy_unscaled == pytest.approx(_entropy_loop(unscaled), rel=1e-9, abs=1e-12)
    assert s.entropy_scaled == pytest.approx(_entropy_loop(scaled), rel=1e-9)


def test_unscaled_saturates_scaled_does_not() -> None:
    small, large = scaling.measure(2), scaling.measure(1024)
    assert large.mean_max_unscaled > 0.95 and large.mean_entropy_unscaled < 0.1
    assert small.mean_max_unscaled < 0.4
    for s in (small, large):  # scaled: the same spread of scores at any d_k
        assert 0.2 < s.mean_max_scaled < 0.45 and s.mean_entropy_scaled > 1.6
    assert large.max_unscaled > 0.999 and large.entropy_unscaled < 1e-5
    one_hot = scaling.entropy(np.array([1.0, 0.0, 0.0]))
    assert one_hot == 0.0 and math.copysign(1, one_hot) == 1  # 0.0, not −0.0 (JSON would say -0.0)


def test_api(client: TestClient) -> None:
    d = client.post("/api/scaling", json={"d_k": 256}).json()
    s = scaling.measure(256)
    assert d["d_k"] == 256 and d["sqrt_d_k"] == 16.0 and d["std"] == s.std
    assert d["unscaled"] == s.unscaled.tolist() and d["scaled"] == s.scaled.tolist()
    assert [p["d_k"] for p in d["sweep"]] == [2**i for i in range(1, 11)]
    assert d["sweep"][5]["std"] == scaling.measure(64).std
    assert d["ln_keys"] == math.log(scaling.KEYS)


def test_a_class_at_one_d_k_is_measured_once(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every phone of a class opens the chapter at the same d_k: measured for the first, the same bytes for all."""
    measured: list[int] = []
    measure = scaling.measure

    def counted(d_k: int) -> scaling.Scaling:
        measured.append(d_k)
        return measure(d_k)

    monkeypatch.setattr(scaling, "measure", counted)
    answers = [client.post("/api/scaling", json={"d_k": 77}).content for _ in range(5)]
    assert measured == [77] and len(set(answers)) == 1
    client.post("/api/scaling", json={"d_k": 78})
    assert measured == [77, 78]


@pytest.mark.parametrize("body", [{"d_k": 1}, {"d_k": 1025}, {"d_k": 0}, {"d_k": 64.5}, {"d_k": "64"}, {}])
def test_bad_d_k(client: TestClient, body: object) -> None:
    r = client.post("/api/scaling", json=body)
    assert r.status_code == 422
    item = r.json()["detail"][0]
    assert item["loc"] == ["body", "d_k"] and item["msg"].startswith("d_k:")


def test_limits_are_documented(client: TestClient) -> None:
    body = client.get("/openapi.json").json()["paths"]["/api/scaling"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]["properties"]["d_k"]
    assert schema["minimum"] == 2 and schema["maximum"] == 1024 and "2 … 1024" in schema["description"]
