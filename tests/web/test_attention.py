"""POST /api/attention and the examples: the seeds' numbers over HTTP, and every kind of bad input."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import frame, limits
from app.attention import STAGES, attention
from app.examples import EXAMPLES
from app.main import create_app
from tests.budget import examples

CAT = EXAMPLES["the-cat-ate-its-fish"]
CAT_BODY = {"tokens": list(CAT.tokens), "q": CAT.q.tolist(), "k": CAT.k.tolist(), "v": CAT.v.tolist()}


def strict_json(text: str | bytes) -> Any:
    """Parse JSON refusing NaN and ±Infinity, which no response may contain."""

    def refuse(name: str) -> None:
        raise AssertionError(f"response contains {name}")

    return json.loads(text, parse_constant=refuse)


def test_the_cat_ate_its_fish_over_http(client: TestClient) -> None:
    r = client.post("/api/attention", json=CAT_BODY)
    assert r.status_code == 200
    body = strict_json(r.content)
    assert body["tokens"] == ["the", "cat", "ate", "its", "fish"]
    assert body["mask"] == "full" and body["d_k"] == 2
    assert body["scores"][3] == [0, 6, 0, 1, 2]
    assert [round(x, 2) for x in body["scaled"][3]] == [0.0, 4.24, 0.0, 0.71, 1.41]
    assert [round(x, 3) for x in body["weights"][3]] == [0.013, 0.895, 0.013, 0.026, 0.053]
    assert [round(x, 3) for x in body["output"][3]] == [0.903, 0.059]


def test_causal_hidden_cells_are_null_and_cat_is_fifty_fifty(client: TestClient) -> None:
    body = strict_json(client.post("/api/attention", json={**CAT_BODY, "mask": "causal"}).content)
    assert body["mask"] == "causal"
    assert body["weights"][1] == [0.5, 0.5, 0.0, 0.0, 0.0]
    assert body["masked"][1][2:] == [None, None, None]
    assert sum(row.count(None) for row in body["masked"]) == 10
    assert all(x is not None for row in body["weights"] for x in row)


def test_every_digit_survives_the_wire(client: TestClient) -> None:
    ex = EXAMPLES["select-from-customers"]
    body = {"tokens": list(ex.tokens), "q": ex.q.tolist(), "k": ex.k.tolist(), "v": ex.v.tolist(), "mask": "causal"}
    got = strict_json(client.post("/api/attention", json=body).content)
    want = attention(ex.q, ex.k, ex.v, "causal")
    for name in STAGES:
        np.testing.assert_array_equal(
            np.array(got[name], dtype=float), np.where(np.isneginf(getattr(want, name)), np.nan, getattr(want, name))
        )


def test_the_torch_backend_serves_the_same_numbers() -> None:
    torch_client = TestClient(create_app(backend="torch"))
    for mask in ("full", "causal"):
        got = strict_json(torch_client.post("/api/attention", json={**CAT_BODY, "mask": mask}).content)
        want = attention(CAT.q, CAT.k, CAT.v, mask)
        np.testing.assert_allclose(np.array(got["weights"]), want.weights, rtol=0, atol=1e-15)
        np.testing.assert_allclose(np.array(got["output"]), want.output, rtol=0, atol=1e-15)


def test_an_unusable_backend_stops_the_app_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_BACKEND", "jax")
    with pytest.raises(RuntimeError, match="'numpy' or 'torch', not 'jax'"):
        create_app()


def test_multi_head_stages_keep_the_head_axis(client: TestClient) -> None:
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 4, 2))
    body = strict_json(
        client.post(
            "/api/attention", json={"q": q.tolist(), "k": k.tolist(), "v": v.tolist(), "mask": "causal"}
        ).content
    )
    assert body["tokens"] == ["t0", "t1", "t2", "t3"]
    assert np.array(body["weights"]).shape == (3, 4, 4)
    assert np.array(body["output"]).shape == (3, 4, 2)
    np.testing.assert_allclose(np.array(body["output"]), attention(q, k, v, "causal").output, rtol=0, atol=0)


def test_frame_request_and_response_carry_the_same_numbers(client: TestClient) -> None:
    ex = EXAMPLES["select-from-customers"]
    sent = frame.encode({"tokens": list(ex.tokens), "mask": "causal"}, {"q": ex.q, "k": ex.k, "v": ex.v})
    r = client.post(
        "/api/attention",
        content=bytes(sent),
        headers={"content-type": frame.FRAME_MEDIA_TYPE, "accept": frame.FRAME_MEDIA_TYPE},
    )
    assert r.status_code == 200 and r.headers["content-type"] == frame.FRAME_MEDIA_TYPE
    fields, arrays = frame.decode(r.content)
    assert fields == {"tokens": list(ex.tokens), "mask": "causal", "d_k": 8}
    want = attention(ex.q, ex.k, ex.v, "causal")
    for name in STAGES:
        np.testing.assert_array_equal(arrays[name], getattr(want, name))
    assert np.isneginf(arrays["masked"][0, 1])


def test_examples_are_listed_and_fetched(client: TestClient) -> None:
    listed = client.get("/api/examples").json()
    assert [e["id"] for e in listed] == ["the-cat-ate-its-fish", "select-from-customers"]
    one = client.get("/api/examples/the-cat-ate-its-fish").json()
    assert one["q"][3] == [2.0, 0.0] and one["k"][1] == [3.0, 0.0] and one["mask"] == "full"
    sql = client.get("/api/examples/select-from-customers").json()
    assert len(sql["q"]) == 4 and len(sql["q"][0]) == 8 and sql["mask"] == "causal"
    r = client.get("/api/examples/the-dog")
    assert r.status_code == 404 and r.json()["detail"][0]["loc"] == ["path", "example_id"]


def _rows(n: int, d: int, value: float = 1.0) -> list[list[float]]:
    return [[value] * d for _ in range(n)]


ONE = [[1.0]]
BAD_INPUTS: list[tuple[str, Any, str, str]] = [
    # (case, body, field named in loc, words in msg)
    (
        "ragged q",
        {"q": [[1, 2], [3]], "k": [[1, 2], [3, 4]], "v": ONE * 2},
        "q",
        "row [1] has 1 entries but row [0] has 2",
    ),
    ("ragged 3-D k", {"q": [[[1], [2]]], "k": [[[1], [2, 3]]], "v": [[[1], [2]]]}, "k", "row [0][1] has 2 entries"),
    ("string in q", {"q": [[1, "2"]], "k": [[1, 2]], "v": ONE}, "q", "q[0][1]: Input should be a valid number"),
    ("bool in v", {"q": ONE, "k": ONE, "v": [[True]]}, "v", "v[0][0]: Input should be a valid number"),
    ("null in k", {"q": ONE, "k": [[None]], "v": ONE}, "k", "valid number"),
    ("q not a list", {"q": 3, "k": ONE, "v": ONE}, "q", "non-empty list of rows"),
    ("q empty", {"q": [], "k": ONE, "v": ONE}, "q", "non-empty list of rows"),
    ("rows of nothing (d_k = 0)", {"q": [[]], "k": [[]], "v": ONE}, "q", "at least 1 number"),
    ("d_v = 0", {"q": ONE, "k": ONE, "v": [[]]}, "v", "at least 1 number"),
    ("k shape differs", {"q": [[1, 2]], "k": [[1, 2], [3, 4]], "v": ONE}, "k", "must have the shape of q"),
    ("v rows differ", {"q": _rows(2, 1), "k": _rows(2, 1), "v": _rows(3, 1)}, "v", "must have 2 rows"),
    ("2-D q with 3-D k", {"q": ONE, "k": [ONE], "v": ONE}, "k", "same number of dimensions"),
    ("4-D q", {"q": [[[[1.0]]]], "k": [[[[1.0]]]], "v": [[[[1.0]]]]}, "q", "valid number"),
    ("unknown mask", {"q": ONE, "k": ONE, "v": ONE, "mask": "diagonal"}, "mask", "'full' or 'causal'"),
    ("unknown field", {"q": ONE, "k": ONE, "v": ONE, "temperature": 2}, "temperature", "Extra inputs"),
    ("tokens miscounted", {"tokens": ["a", "b"], "q": ONE, "k": ONE, "v": ONE}, "tokens", "2 labels but q has 1 rows"),
    ("token too long", {"tokens": ["x" * 101], "q": ONE, "k": ONE, "v": ONE}, "tokens", "at most 100 characters"),
    ("token not a string", {"tokens": [7], "q": ONE, "k": ONE, "v": ONE}, "tokens", "valid string"),
    (
        "too many tokens",
        {"q": _rows(513, 1), "k": _rows(513, 1), "v": _rows(513, 1)},
        "q",
        "513 tokens (rows); the limit is 512",
    ),
    ("too wide", {"q": _rows(1, 1025), "k": _rows(1, 1025), "v": ONE}, "q", "1025 numbers; the limit is 1024"),
    ("too many heads", {"q": [ONE] * 17, "k": [ONE] * 17, "v": [ONE] * 17}, "q", "17 heads; between 1 and 16"),
    (
        "too many cells",
        {"q": [_rows(512, 1)] * 13, "k": [_rows(512, 1)] * 13, "v": [_rows(512, 1)] * 13},
        "q",
        "cells per stage; the limit is 3,145,728",
    ),
    (
        "too many values",
        {"q": _rows(512, 1024), "k": _rows(512, 1024), "v": _rows(512, 1)},
        "q",
        "the limit is 786,432",
    ),
    ("scores overflow", {"q": [[1e200]], "k": [[1e200]], "v": ONE}, "q", "overflow float64"),
]


@pytest.mark.parametrize(("case", "body", "field", "words"), BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gets_a_422_naming_the_field(
    client: TestClient, case: str, body: Any, field: str, words: str
) -> None:
    r = client.post("/api/attention", json=body)
    assert r.status_code == 422, r.text
    detail = strict_json(r.content)["detail"]
    assert set(detail[0]) == {"loc", "msg", "type"}
    assert detail[0]["loc"][:2] == ["body", field]
    assert words in detail[0]["msg"]


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b'{"q": [[NaN]], "k": [[1]], "v": [[1]]}', "finite number"),
        (b'{"q": [[Infinity]], "k": [[1]], "v": [[1]]}', "finite number"),
        (b'{"q": [[-Infinity]], "k": [[1]], "v": [[1]]}', "finite number"),
        (b'{"q": [[1e400]], "k": [[1]], "v": [[1]]}', "finite number"),
        (b'{"q": [[1' + b"0" * 400 + b']], "k": [[1]], "v": [[1]]}', "valid number"),
    ],
)
def test_nan_and_infinity_literals_are_refused(client: TestClient, raw: bytes, words: str) -> None:
    r = client.post("/api/attention", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "q"] and words in r.json()["detail"][0]["msg"]


def test_finite_numbers_whose_sum_overflows_are_accepted(client: TestClient) -> None:
    """A matrix is checked for ∞ and NaN by its sum first (app.attention.all_finite): finite numbers
    whose sum overflows are still finite, and are answered."""
    body = {"q": [[1e308, 1e308]], "k": [[1e-300, 0.0]], "v": [[1.0]]}
    r = client.post("/api/attention", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["scores"] == [[1e308 * 1e-300]]
    raw = b'{"q": [[1e308, 1e308, NaN]], "k": [[1, 0, 0]], "v": [[1]]}'
    r = client.post("/api/attention", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["msg"].startswith("q[0][2]: Input should be a finite number")


@pytest.mark.parametrize(
    ("raw", "ctype", "status", "loc"),
    [
        (b"{not json", "application/json", 422, ["body"]),
        (b"", "application/json", 422, ["body"]),
        (b"[1, 2]", "application/json", 422, ["body"]),
        (b"q=1", "application/x-www-form-urlencoded", 415, ["header", "content-type"]),
        (b"ATF1", frame.FRAME_MEDIA_TYPE, 422, ["body"]),
        (b"XXXX\x00\x00\x00\x00", frame.FRAME_MEDIA_TYPE, 422, ["body"]),
        (b"ATF1\xff\x00\x00\x00{}", frame.FRAME_MEDIA_TYPE, 422, ["body"]),
        (bytes(frame.encode({}, {"q": np.ones((1, 1))}))[:-4], frame.FRAME_MEDIA_TYPE, 422, ["body", "arrays", "q"]),
        (
            bytes(
                frame.encode(
                    {"mask": "causal"}, {"q": np.ones((1, 1)), "k": np.ones((1, 1)), "v": np.array([[math.nan]])}
                )
            ),
            frame.FRAME_MEDIA_TYPE,
            422,
            ["body", "v"],
        ),
    ],
)
def test_unreadable_bodies_get_a_4xx(client: TestClient, raw: bytes, ctype: str, status: int, loc: list[str]) -> None:
    r = client.post("/api/attention", content=raw, headers={"content-type": ctype})
    assert r.status_code == status, r.text
    assert r.json()["detail"][0]["loc"] == loc


def test_oversized_bodies_get_413_declared_or_streamed(client: TestClient) -> None:
    big = b" " * (limits.MAX_BODY_BYTES + 1)
    r = client.post("/api/attention", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["detail"][0]["loc"] == ["body"]

    def chunks() -> Iterator[bytes]:  # no content-length: the server must count as it reads
        for _ in range(limits.MAX_BODY_BYTES // (1 << 20) + 1):
            yield b" " * (1 << 20)

    r = client.post("/api/attention", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


finite = st.floats(-1e6, 1e6, allow_nan=False)
junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=20,
)


@settings(max_examples=examples(150, 50), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=junk, k=junk, v=junk, mask=junk, tokens=junk)
def test_junk_never_gets_a_5xx(client: TestClient, q: Any, k: Any, v: Any, mask: Any, tokens: Any) -> None:
    raw = json.dumps({"q": q, "k": k, "v": v, "mask": mask, "tokens": tokens}).encode()  # may hold NaN
    r = client.post("/api/attention", content=raw, headers={"content-type": "application/json"})
    assert r.status_code in (200, 422), r.text
    strict_json(r.content)


@settings(max_examples=examples(60, 20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 6),
    d_k=st.integers(1, 4),
    d_v=st.integers(1, 4),
    data=st.data(),
    mask=st.sampled_from(["full", "causal"]),
)
def test_any_valid_request_answers_finite_rows_summing_to_one(
    client: TestClient, n: int, d_k: int, d_v: int, data: st.DataObject, mask: str
) -> None:
    def mat(d: int) -> list[list[float]]:
        return data.draw(st.lists(st.lists(finite, min_size=d, max_size=d), min_size=n, max_size=n))

    body = strict_json(
        client.post("/api/attention", json={"q": mat(d_k), "k": mat(d_k), "v": mat(d_v), "mask": mask}).content
    )
    weights = np.array(body["weights"])
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-12)
    assert (np.array(body["masked"], dtype=float)[np.triu_indices(n, 1)] != None).all() if mask == "full" else True  # noqa: E711


def test_hardening_headers_and_csp(client: TestClient) -> None:
    for path in ("/", "/api/examples", "/docs"):
        h = client.get(path).headers
        assert h["x-content-type-options"] == "nosniff"
        assert h["x-frame-options"] == "DENY"
        assert h["referrer-policy"] == "no-referrer"
        csp = h["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
        assert "object-src 'none'" in csp and "frame-ancestors 'none'" in csp


def test_static_urls_are_versioned_and_cached_by_version(client: TestClient) -> None:
    page = client.get("/").text  # the bundle's files when it is fresh, else the modules and an import map
    urls = re.findall(r'(?:src|href)="(/static/[^"]+)"', page) + re.findall(r'": "(/static/[^"]+)"', page)
    assert urls and all("?v=" in u for u in urls), urls
    assert "http://" not in page and "https://" not in page
    path = urls[0].split("?")[0]
    versioned = client.get(path + "?v=x")
    assert versioned.status_code == 200 and "immutable" in versioned.headers["cache-control"]
    assert client.get(path).headers["cache-control"] == "no-cache"
    assert client.get("/").headers["cache-control"] == "no-cache"


def test_docs_are_served_without_a_cdn(client: TestClient) -> None:
    html = client.get("/docs").text
    assert "cdn" not in html.lower() and "/static/vendor/swagger-ui/swagger-ui-bundle.js?v=" in html
    schema = client.get("/openapi.json").json()
    body = schema["paths"]["/api/attention"]["post"]["requestBody"]["content"]
    assert {"application/json", frame.FRAME_MEDIA_TYPE} <= set(body)
    assert "n ≤ 512" in body["application/json"]["schema"]["properties"]["q"]["description"]
