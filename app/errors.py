"""One shape for every client error: {"detail": [{"loc": [...], "msg": "...", "type": "..."}]}.

FastAPI's default handler echoes the rejected input back, which can be huge or hold NaN
(that JSON cannot encode); these handlers keep only where (loc), what (msg) and a type.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from app.schemas import InputError


def detail(loc: Sequence[str | int], msg: str, type_: str) -> dict[str, Any]:
    return {"loc": list(loc), "msg": msg, "type": type_}


def _clean(errors: Iterable[Any]) -> list[dict[str, Any]]:
    return [
        detail([str(p) if not isinstance(p, int) else p for p in e["loc"]], str(e["msg"]), str(e["type"]))
        for e in errors
    ]


class ClientError(Exception):
    """A 4xx answer whose detail names the field (loc) and the rule."""

    def __init__(self, status: int, loc: Sequence[str | int], msg: str, type_: str) -> None:
        super().__init__(msg)
        self.status, self.items = status, [detail(loc, msg, type_)]

    @classmethod
    def of(cls, status: int, items: list[dict[str, Any]]) -> ClientError:
        """A ClientError carrying several detail items at once (e.g. a FrameError's)."""
        first = items[0]
        out = cls(status, first["loc"], first["msg"], first["type"])
        out.items = [detail(i["loc"], i["msg"], i["type"]) for i in items]
        return out


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _clean(exc.errors())}, status_code=422)

    @app.exception_handler(InputError)
    async def _input(_: Request, exc: InputError) -> JSONResponse:
        return JSONResponse({"detail": [detail(["body", exc.field], exc.message, "value_error")]}, status_code=422)

    @app.exception_handler(ClientError)
    async def _client(_: Request, exc: ClientError) -> JSONResponse:
        return JSONResponse({"detail": exc.items}, status_code=exc.status)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        body = exc.detail if isinstance(exc.detail, list) else [detail([], str(exc.detail), "http_error")]
        return JSONResponse({"detail": body}, status_code=exc.status_code, headers=exc.headers)
