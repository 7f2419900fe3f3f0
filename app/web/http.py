"""HTTP plumbing, in one place, for every route:

  read_body(request, limit)         the raw body, refused with 413 as soon as it passes `limit` bytes
  json_body(request, Model, limit)  the body as a pydantic Model, each field of its own JSON type: 415 if
                                    not JSON, 413 past the limit, 422 naming the field and the rule it broke
  json_response(obj) / json_bytes   JSON out (orjson; NumPy arrays as nested lists)
  body_doc(Model) / error_docs(…)   the OpenAPI text for a hand-read body and its error answers
  install(app)                      the one mapping from the app's errors (app.errors) to answers
  DirectRoute                       a route class for handlers that take the Request and return a Response

Handlers stay thin: they read a body, call the math or a service, and answer; anything raised on
the way (ClientError, InputError, ModelError, a validation error) becomes its answer here, once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar

import orjson
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from app import limits
from app.errors import ClientError, InputError, ModelError, detail
from app.schemas import ErrorResponse
from app.web.security import hide_paths

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger("uvicorn.error")  # beside uvicorn's own lines
JSON = "application/json"


# ---- bodies in ------------------------------------------------------------------------------


async def read_body(request: Request, limit: int = limits.MAX_BODY_BYTES) -> bytes:
    """The body, refused with 413 as soon as it passes `limit` bytes (declared or streamed).

    The bytes are not kept on the request (as request.body() would): once parsed they can go.
    """
    too_big = ClientError(413, ["body"], f"the body is larger than {limit:,} bytes", "too_large")
    declared = declared_size(request)
    if declared is not None and declared > limit:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


def declared_size(request: Request) -> int | None:
    """The Content-Length the client declared, if any."""
    declared = request.headers.get("content-length", "")
    return int(declared) if declared.isdigit() else None


def media_type(content_type: str) -> str:
    """The media type of a Content-Type header, without parameters, lower-cased."""
    return content_type.split(";")[0].strip().lower()


def is_json(media: str) -> bool:
    return media in (JSON, "") or media.endswith("+json")


def require_json(request: Request) -> None:
    """A 415 naming the Content-Type unless it is JSON (or absent)."""
    media = media_type(request.headers.get("content-type", JSON))
    if not is_json(media):
        raise ClientError(415, ["header", "content-type"], f"send application/json, not {media!r}", "media_type")


def body_error(e: ValidationError, named: bool = False) -> RequestValidationError:
    """A model's validation errors as the API reports them: located in the body (422).

    named: each message starts with the field it is about ("d_k: Input should be …").
    """
    items = []
    for err in e.errors():
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
        msg = f"{where}: {err['msg']}" if named and where else err["msg"]
        items.append({**err, "loc": ("body", *err["loc"]), "msg": msg})
    return RequestValidationError(items)


async def json_body(
    request: Request,
    model: type[M],
    limit: int = limits.MAX_BODY_BYTES,
    *,
    empty_is_default: bool = False,
    named: bool = False,
    strict: bool = True,
) -> M:
    """The JSON body as `model`: 415 if it is not JSON, 413 past `limit` bytes, 422 naming the field.

    empty_is_default: an empty body is `{}` (every field its default), for bodies that are all optional.
    named: each 422 message starts with the field's name (see body_error).
    strict: each field must be of its schema's JSON type (pydantic's strict mode): an integer takes no
    true, "1" or 1.0, a number no "0.5", a flag no 1 — read as something else, such a body would be
    answered as if it were valid. False only for the address bar's state, whose strings may come as
    numbers (app.classroom.schemas.ViewState); a model of its own may still be stricter.
    """
    require_json(request)
    body = await read_body(request, limit)
    if empty_is_default and not body:
        body = b"{}"
    no_bools = b"true" not in body and b"false" not in body  # app.schemas.Matrix may then convert in C
    try:
        return model.model_validate_json(body, strict=strict, context={"no_bools": no_bools})
    except ValidationError as e:
        raise body_error(e, named) from None


# ---- answers out ----------------------------------------------------------------------------


def json_bytes(obj: Any) -> bytes:
    """obj as JSON bytes; NumPy arrays become nested lists (−∞ and NaN become null)."""
    return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY)


def json_response(obj: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json_bytes(obj), status_code=status_code, media_type=JSON, headers=headers)


class DirectRoute(APIRoute):
    """A route whose handler reads the Request itself and returns a Response (as POST /api/attention's does).

    FastAPI's own request handler solves the dependencies, reads and validates the parameters and the
    body, and serialises a returned model: for a handler that takes only the Request and returns a
    Response there is nothing of that to do, yet it costs ~60 µs a request (a third of a 5-token
    answer's work). This route calls the handler directly; everything around it stays FastAPI's:
    the OpenAPI text (from the route's arguments), the body limit, the exception handlers of install().
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        d = self.dependant
        if d.dependencies or d.path_params or d.query_params or d.header_params or d.cookie_params or d.body_params:
            raise TypeError(f"{self.path}: a DirectRoute's handler takes the Request only, no parameters")
        return self.endpoint


# ---- the OpenAPI text of hand-read bodies -----------------------------------------------------


Responses = dict[int | str, dict[str, Any]]
_ERROR_TEXT = {
    401: "No Bearer credential.",
    403: "A wrong one.",
    404: "Not found.",
    413: "Body over the limit in bytes (the detail says which).",
    415: "Body not JSON.",
    422: "The detail names the field and the rule it broke.",
    503: "The model's files are missing or unreadable (server set-up).",
}


def error_docs(*statuses: int, **texts: str) -> Responses:
    """OpenAPI `responses` for error statuses, each with the one error body (ErrorResponse).

    texts: a status's own description, keyed "s413" etc. (keyword arguments cannot be numbers); a
    status named only there is added too.
    """
    out: Responses = {s: {"model": ErrorResponse, "description": _ERROR_TEXT[s]} for s in statuses}
    for key, text in texts.items():
        out[int(key.removeprefix("s"))] = {"model": ErrorResponse, "description": text}
    return out


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """The schema with its local $refs replaced by the definitions (the OpenAPI document has no $defs)."""
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def body_doc(model: type[BaseModel], required: bool = True) -> dict[str, Any]:
    """openapi_extra for a route that reads its body with json_body: the body's schema, self-contained."""
    schema = model.model_json_schema()
    schema = _inline(schema, schema.pop("$defs", {}))
    return {"requestBody": {"required": required, "content": {JSON: {"schema": schema}}}}


# ---- the one error mapping ------------------------------------------------------------------


def _clean(errors: Iterable[Any]) -> list[dict[str, Any]]:
    return [
        detail([str(p) if not isinstance(p, int) else p for p in e["loc"]], str(e["msg"]), str(e["type"]))
        for e in errors
    ]


def _answer(items: list[dict[str, Any]], status: int, headers: Mapping[str, str] | None = None) -> Response:
    return JSONResponse({"detail": items}, status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    """Every error the app raises, answered in its one shape: {"detail": [{"loc", "msg", "type"}]}.

    FastAPI's default validation handler echoes the rejected input back, which can be huge or hold
    NaN (that JSON cannot encode); these keep only where (loc), what (msg) and a type.
    """

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> Response:
        return _answer(_clean(exc.errors()), 422)

    @app.exception_handler(InputError)
    async def _input(_: Request, exc: InputError) -> Response:
        return _answer([detail([exc.where, exc.field], exc.message, exc.type, exc.ctx)], 422)

    @app.exception_handler(ClientError)
    async def _client(_: Request, exc: ClientError) -> Response:
        return _answer(exc.items, exc.status, exc.headers)

    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, _: ClientDisconnect) -> Response:
        # the client went away (or the server closed it: a body too slow, whose 408 app.web.server
        # logs) before its body was complete: nobody reads an answer, and the log gets no traceback
        log.debug("%s %s: the client went away before its body was complete", request.method, request.url.path)
        return Response(status_code=408)

    @app.exception_handler(ModelError)
    async def _model(_: Request, exc: ModelError) -> Response:
        msg = f"the model cannot be used: {hide_paths(str(exc))}"  # the model's name, not the server's folders
        return _answer([detail(["model"], msg, "model_unavailable")], 503)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> Response:
        body = exc.detail if isinstance(exc.detail, list) else [detail([], str(exc.detail), "http_error")]
        return _answer(body, exc.status_code, exc.headers)
