"""app.web.http: the one body reader, JSON out, the model handle and the one error mapping.

A small app with routes of its own exercises each piece the way the real routes use it.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import Message

from app.errors import ClientError, InputError, ModelError
from app.model import registry
from app.model.loader import handle_for
from app.web.http import DirectRoute, body_doc, install, json_body, json_response, read_body
from tests.asyncrun import run_async


class Inner(BaseModel):
    n: int = Field(ge=0)


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")

    word: str = "cat"
    inner: Inner | None = None


class Needs(BaseModel):
    d_k: int


class Address(BaseModel):
    """Strings that may come as numbers, as the classroom's ViewState (read with strict=False)."""

    model_config = ConfigDict(coerce_numbers_to_str=True)

    focus: str | None = None


LIMIT = 64


def make_app() -> FastAPI:
    app = FastAPI()
    install(app)

    @app.post("/body")
    async def body(request: Request) -> Response:
        got = await json_body(request, Body, LIMIT, empty_is_default=True)
        return json_response(got.model_dump())

    @app.post("/needs")
    async def needs(request: Request) -> Response:
        got = await json_body(request, Needs, LIMIT, named=True)
        return json_response({"d_k": got.d_k})

    @app.post("/address")
    async def address(request: Request) -> Response:
        got = await json_body(request, Address, LIMIT, strict=False)
        return json_response(got.model_dump())

    @app.post("/model/{name}")
    async def model(request: Request, name: str) -> Response:
        return json_response({"path": str(registry.handle(None if name == "default" else name, None).path)})

    @app.get("/raise/{what}")
    async def raise_(what: str) -> Response:
        if what == "model":
            raise ModelError("config.json is missing")
        raise InputError("word", "word must be a word")

    @app.get("/numbers")
    async def numbers() -> Response:
        return json_response({"a": np.array([[1.5, -np.inf]]), "n": np.int64(3)})

    return app


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(make_app())


def test_a_body_is_read_as_its_model(client: TestClient) -> None:
    r = client.post("/body", json={"word": "fish", "inner": {"n": 2}})
    assert r.status_code == 200 and r.json() == {"word": "fish", "inner": {"n": 2}}


def test_an_empty_body_is_every_default_only_where_asked(client: TestClient) -> None:
    assert client.post("/body", content=b"").json() == {"word": "cat", "inner": None}
    r = client.post("/needs", content=b"")
    assert r.status_code == 422 and r.json()["detail"][0]["type"] == "json_invalid"


def test_the_field_that_broke_a_rule_is_named(client: TestClient) -> None:
    r = client.post("/body", json={"inner": {"n": -1}})
    assert r.status_code == 422
    (item,) = r.json()["detail"]
    assert item["loc"] == ["body", "inner", "n"] and "greater than or equal to 0" in item["msg"]
    r = client.post("/needs", json={"d_k": "x"})  # named=True: the message starts with the field
    assert r.json()["detail"][0]["msg"].startswith("d_k: Input should be a valid integer")
    r = client.post("/body", json={"colour": "red"})
    assert r.json()["detail"][0]["loc"] == ["body", "colour"] and r.json()["detail"][0]["type"] == "extra_forbidden"


@pytest.mark.parametrize("d_k", [True, "64", 64.5, 64.0, None])
def test_a_field_takes_its_own_json_type_only(client: TestClient, d_k: Any) -> None:
    """The schema says integer: true, "64" and 64.5 are refused, not read as 1, 64 or 64; 64.0 too
    (pydantic's strict mode, though JSON Schema would count it an integer: a client writes 64)."""
    r = client.post("/needs", json={"d_k": d_k})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "d_k"]
    assert client.post("/needs", json={"d_k": 64}).json() == {"d_k": 64}


def test_a_body_read_leniently_takes_numbers_for_strings(client: TestClient) -> None:
    assert client.post("/address", json={"focus": 3}).json() == {"focus": "3"}


def test_a_body_that_is_not_json_is_a_415_naming_its_type(client: TestClient) -> None:
    r = client.post("/body", content=b"word=cat", headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415
    assert r.json()["detail"] == [
        {
            "loc": ["header", "content-type"],
            "msg": "send application/json, not 'application/x-www-form-urlencoded'",
            "type": "media_type",
        }
    ]
    assert client.post("/body", content=b"{}", headers={"content-type": "application/problem+json"}).status_code == 200


def test_a_body_over_the_limit_is_a_413_naming_the_limit(client: TestClient) -> None:
    r = client.post("/body", content=json.dumps({"word": "x" * LIMIT}).encode())
    assert r.status_code == 413
    assert r.json()["detail"] == [
        {"loc": ["body"], "msg": f"the body is larger than {LIMIT} bytes", "type": "too_large"}
    ]


def _request(chunks: list[bytes], headers: dict[str, str]) -> tuple[Request, list[int]]:
    """A request whose body arrives in chunks, counting how many were taken."""
    taken: list[int] = []

    async def receive() -> Message:
        taken.append(1)
        if len(taken) > len(chunks):
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": chunks[len(taken) - 1], "more_body": len(taken) < len(chunks)}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    return Request(scope, receive), taken


def test_the_limit_holds_while_reading_not_after() -> None:
    # no Content-Length: the reader stops at the first chunk past the limit, the rest never read
    request, taken = _request([b"x" * 40] * 100, {})
    with pytest.raises(ClientError) as e:
        run_async(read_body, request, LIMIT)
    assert e.value.status == 413 and len(taken) == 2
    # a declared length over the limit is refused before a byte is read
    request, taken = _request([b"x" * 40] * 100, {"content-length": "4000"})
    with pytest.raises(ClientError) as e:
        run_async(read_body, request, LIMIT)
    assert e.value.status == 413 and taken == []
    request, _ = _request([b"ab", b"cd"], {})
    assert run_async(read_body, request, LIMIT) == b"abcd"


def test_an_unknown_model_id_is_a_422_naming_it(client: TestClient) -> None:
    assert client.post("/model/default").json() == {"path": str(handle_for(None).path)}
    r = client.post("/model/llama-9000")
    assert r.status_code == 422
    assert r.json()["detail"] == [
        {
            "loc": ["body", "model"],
            "msg": "no model 'llama-9000': the models are all-minilm-l6-v2, smollm2-135m",
            "type": "unknown_model",
        }
    ]
    assert client.post("/model/smollm2-135m").json() == {"path": str(handle_for(registry.decoder_file()).path)}
    r = client.post("/model/" + "x" * 60)
    assert r.json()["detail"][0]["msg"] == f"no model '{'x' * 37}…': the models are all-minilm-l6-v2, smollm2-135m"


def test_one_error_mapping_for_the_apps_own_errors(client: TestClient) -> None:
    r = client.get("/raise/model")
    assert r.status_code == 503
    assert r.json() == {
        "detail": [
            {"loc": ["model"], "msg": "the model cannot be used: config.json is missing", "type": "model_unavailable"}
        ]
    }
    r = client.get("/raise/input")
    assert r.status_code == 422
    assert r.json() == {"detail": [{"loc": ["body", "word"], "msg": "word must be a word", "type": "value_error"}]}


def test_json_out_writes_numpy_as_lists_and_infinity_as_null(client: TestClient) -> None:
    r = client.get("/numbers")
    assert r.headers["content-type"] == "application/json"
    assert r.content == b'{"a":[[1.5,null]],"n":3}'


def test_a_body_doc_is_self_contained() -> None:
    doc: dict[str, Any] = body_doc(Body)
    schema = doc["requestBody"]["content"]["application/json"]["schema"]
    assert "$ref" not in json.dumps(schema) and "$defs" not in schema
    assert schema["properties"]["inner"]["anyOf"][0]["properties"]["n"]["minimum"] == 0
    assert doc["requestBody"]["required"] is True and body_doc(Body, required=False)["requestBody"]["required"] is False


def test_a_direct_route_refuses_a_handler_that_takes_parameters() -> None:
    async def handler(request: Request, page: int) -> Response:
        return Response(str(page))

    with pytest.raises(TypeError, match="takes the Request only"):
        APIRouter().add_api_route("/x", handler, route_class_override=DirectRoute)
