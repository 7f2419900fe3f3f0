"""HTTP truthfulness: HEAD on every GET route, zstd or gzip for text but never for frames, Accept and
Accept-Encoding q-values,
an OpenAPI schema that documents what is sent, bodies read as it says, and one plain message per rule."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
import zstandard
from fastapi.testclient import TestClient

from app import frame
from app.examples import EXAMPLES
from app.web.middleware import encoding_for
from app.web.transport import preferred

CAT = EXAMPLES["the-cat-ate-its-fish"]
CAT_BODY = {"tokens": list(CAT.tokens), "q": CAT.q.tolist(), "k": CAT.k.tolist(), "v": CAT.v.tolist()}
JSON, FRAME = "application/json", frame.FRAME_MEDIA_TYPE


def static_file(client: TestClient) -> str:
    page = client.get("/", headers={"accept-encoding": "identity"}).text
    start = page.index("/static/")
    return page[start : page.index('"', start)].replace("&amp;", "&")


@pytest.mark.parametrize("path", ["/", "/docs", "/openapi.json", "/api/examples", "/api/examples/the-cat-ate-its-fish"])
def test_head_answers_like_get_without_a_body(client: TestClient, path: str) -> None:
    for encoding in ("identity", "gzip"):
        get = client.get(path, headers={"accept-encoding": encoding})
        head = client.head(path, headers={"accept-encoding": encoding})
        after = client.get(path, headers={"accept-encoding": encoding})  # (the page changes when its bundle is rebuilt)
        assert head.status_code == get.status_code == 200 and head.content == b""
        assert head.headers["content-length"] in (get.headers["content-length"], after.headers["content-length"])
        assert head.headers["content-type"] == get.headers["content-type"]
        assert head.headers.get("content-encoding") == get.headers.get("content-encoding")


def test_head_on_a_static_file_and_the_model(client: TestClient) -> None:
    url = static_file(client)
    get, head = client.get(url), client.head(url)
    assert head.status_code == get.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == get.headers["content-length"]
    assert client.head("/api/model").status_code in (200, 503)  # 503 only when the model is not installed
    assert client.head("/api/examples/nope").status_code == 404
    assert client.head("/api/attention").status_code == 405  # a POST route stays one


def test_text_is_compressed(client: TestClient) -> None:
    for path in ("/", "/openapi.json", "/api/examples", static_file(client)):
        plain = client.get(path, headers={"accept-encoding": "identity"})
        packed = client.get(path, headers={"accept-encoding": "gzip"})
        assert "content-encoding" not in plain.headers
        assert packed.headers["content-encoding"] == "gzip", path
        assert "accept-encoding" in packed.headers["vary"].lower()
        assert packed.content == plain.content  # httpx unpacks it
        assert int(packed.headers["content-length"]) < int(plain.headers["content-length"])
    r = client.post("/api/attention", json=CAT_BODY, headers={"accept-encoding": "gzip"})
    assert r.headers["content-encoding"] == "gzip" and r.json()["d_k"] == 2
    r = client.post("/api/attention?format=csv", json=CAT_BODY, headers={"accept-encoding": "gzip"})
    assert r.headers["content-encoding"] == "gzip" and r.text.startswith("query,the,cat")


def test_frames_are_never_compressed(client: TestClient) -> None:
    small = client.post("/api/attention", json=CAT_BODY, headers={"accept": FRAME, "accept-encoding": "gzip"})
    assert small.headers["content-type"] == FRAME and "content-encoding" not in small.headers
    assert frame.decode(small.content)[0]["d_k"] == 2
    q = np.random.default_rng(0).normal(size=(4, 64, 16))  # computed in a slot and streamed
    streamed = client.post(
        "/api/attention",
        content=frame.encode({}, {"q": q, "k": q, "v": q}),
        headers={"content-type": FRAME, "accept": FRAME, "accept-encoding": "gzip, deflate"},
    )
    assert streamed.status_code == 200 and "content-encoding" not in streamed.headers
    assert frame.decode(streamed.content)[1]["weights"].shape == (4, 64, 64)


def test_gzip_bytes_are_real_gzip(client: TestClient) -> None:
    with client.stream("GET", "/openapi.json", headers={"accept-encoding": "gzip"}) as r:
        raw = b"".join(r.iter_raw())
    assert raw[:2] == b"\x1f\x8b" and gzip.decompress(raw).startswith(b"{")


@pytest.mark.parametrize(
    ("accept", "coding"),
    [
        ("gzip, deflate, br, zstd", "zstd"),  # Chromium's and Firefox's
        ("gzip, deflate, br", "gzip"),  # Safari's
        ("zstd", "zstd"),
        ("gzip", "gzip"),
        ("x-gzip", "gzip"),
        ("br, gzip;q=0.5", "gzip"),
        ("zstd;q=0.5, gzip", "gzip"),
        ("zstd;q=0.5, gzip;q=0.5", "zstd"),
        ("gzip, zstd;q=0", "gzip"),
        ("*", "gzip"),  # a client that names neither gets what every client reads
        ("*, zstd", "zstd"),
        ("", None),
        ("identity", None),
        ("gzip;q=0", None),
        ("*, gzip;q=0", None),
        ("gzip;q=x", None),
        ("zstd;q=nan", None),
    ],
)
def test_accept_encoding_q_values(accept: str, coding: str | None) -> None:
    assert encoding_for(accept) == coding


def test_zstd_when_the_browser_offers_it(client: TestClient) -> None:
    browser = {"accept-encoding": "gzip, deflate, br, zstd"}
    for path in ("/", "/api/examples", static_file(client), static_file(client)):  # the bundle twice: once kept
        plain = client.get(path, headers={"accept-encoding": "identity"})
        with client.stream("GET", path, headers=browser) as r:
            raw = b"".join(r.iter_raw())
            assert r.headers["content-encoding"] == "zstd", path
            assert int(r.headers["content-length"]) == len(raw) < len(plain.content)
            assert "accept-encoding" in r.headers["vary"].lower()
        assert zstandard.ZstdDecompressor().decompress(raw) == plain.content, path  # another zstd's reading
    # the same versioned file, asked with gzip after zstd, is gzip (each coding kept apart)
    gz = client.get(static_file(client), headers={"accept-encoding": "gzip"})
    assert gz.headers["content-encoding"] == "gzip" and gz.content == client.get(static_file(client)).content
    r = client.post("/api/attention", json=CAT_BODY, headers=browser)
    assert r.headers["content-encoding"] == "zstd" and r.json()["d_k"] == 2  # httpx unpacks it
    frames = client.post("/api/attention", json=CAT_BODY, headers={**browser, "accept": FRAME})
    assert frames.headers["content-type"] == FRAME and "content-encoding" not in frames.headers


@pytest.mark.parametrize(
    ("accept", "answer"),
    [
        (None, JSON),
        ("*/*", JSON),
        (FRAME, FRAME),
        (f"{JSON}, {FRAME};q=0.5", JSON),
        (f"{JSON}, {FRAME};q=0", JSON),
        (f"{FRAME};q=0", JSON),
        (f"{JSON};q=0.5, {FRAME}", FRAME),
        (f"{FRAME};q=0.9, */*;q=0.1", FRAME),
        ("application/*", JSON),
        (f"{FRAME}, {JSON}", JSON),  # a tie is JSON: frames only when preferred
    ],
)
def test_accept_q_values_are_honoured(client: TestClient, accept: str | None, answer: str) -> None:
    assert preferred(accept, (JSON, FRAME)) == answer
    headers = {"accept": accept} if accept else {}
    r = client.post("/api/attention", json=CAT_BODY, headers=headers)
    assert r.status_code == 200 and r.headers["content-type"] == answer


def test_openapi_documents_what_is_sent(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    for path, operations in schema["paths"].items():
        for method, op in operations.items():
            assert "400" not in op["responses"], (method, path)
            for status, response in op["responses"].items():
                if status.startswith("4") and "content" in response:
                    ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert ref == "#/components/schemas/ErrorResponse", (method, path, status)
    one = schema["paths"]["/api/examples/{example_id}"]["get"]["responses"]
    assert one["404"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
    attention = schema["paths"]["/api/attention"]["post"]
    described = attention["requestBody"]["content"][FRAME]["description"]
    assert '"ATF1"' in described and "float32" in described and "offset" in described
    spans = schema["components"]["schemas"]["AttentionResponse"]["properties"]["spans"]["description"]
    assert "Unicode code points" in spans


@pytest.mark.parametrize("value", ["1", 1.5, -1, True, [0], {"a": 1}])
@pytest.mark.parametrize("field", ["layer", "head"])
def test_layer_and_head_errors_are_plain(client: TestClient, field: str, value: object) -> None:
    r = client.post("/api/attention", json={"sentence": "The cat sat.", field: value})
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert len(detail) == 1 and detail[0]["loc"] == ["body", field], detail
    assert detail[0]["msg"].startswith(f'{field} must be a whole number ≥ 0 or "mean"')
    assert "constrained" not in r.text and "literal[" not in r.text


def test_mask_null_means_the_default_on_both_routes(client: TestClient) -> None:
    r = client.post("/api/attention", json={**CAT_BODY, "mask": None})
    assert r.status_code == 200 and r.json()["mask"] == "full"
    assert r.json()["weights"] == client.post("/api/attention", json=CAT_BODY).json()["weights"]
    r = client.post("/api/attention", json={"sentence": "The cat sat.", "layer": 0, "head": 0, "mask": None})
    assert r.status_code in (200, 503) and (r.status_code == 503 or r.json()["mask"] == "full")
    r = client.post("/api/heads", json={"sentence": "The cat sat.", "mask": None})
    assert r.status_code in (200, 503) and (r.status_code == 503 or r.json()["mask"] == "full")


def test_head_on_an_endless_stream_returns_at_once() -> None:
    import anyio
    from fastapi.responses import StreamingResponse

    from app.main import create_app

    app = create_app(backend="numpy")

    @app.get("/forever")
    async def forever() -> StreamingResponse:
        async def lines() -> AsyncIterator[bytes]:
            while True:
                yield b"data: tick\n\n"
                await anyio.sleep(0.01)

        return StreamingResponse(lines(), media_type="text/event-stream")

    with TestClient(app) as c:
        r = c.head("/forever")
    assert r.status_code == 200 and r.content == b"" and r.headers["content-type"].startswith("text/event-stream")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/generate", {"prompt": "x", "layer": False}),  # schemathesis' case: was answered with layer 0
        ("/api/generate", {"prompt": "x", "max_new_tokens": "3"}),
        ("/api/generate", {"prompt": "x", "temperature": "0.5"}),
        ("/api/generate", {"prompt": "x", "chat": 1}),
        ("/api/lens", {"prompt": "x", "position": True}),
        ("/api/scaling", {"d_k": "64"}),
        ("/api/attention", {"tokens": ["a"], "q": [[1.0]], "k": [[1.0]], "v": [[1.0]], "rows": [True]}),
    ],
)
def test_the_apps_bodies_are_read_as_their_schema_says(client: TestClient, path: str, body: dict[str, Any]) -> None:
    """Each field of its own JSON type: every route's body goes through app.web.http.json_body (strict),
    /api/attention's through its own strict read (tests/web/test_http.py tests the plumbing itself)."""
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text[:200]
    assert r.json()["detail"][0]["loc"][:2] == [
        "body",
        next(k for k in body if k not in ("prompt", "tokens", "q", "k", "v")),
    ]
