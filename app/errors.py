"""The app's own errors, in a leaf module: it imports nothing from app and nothing from the web.

  ClientError   a 4xx answer whose detail names the field (loc) and the rule
  InputError    a request that is well-formed but asks for what cannot be done (422, in the body)
  ModelError    a model directory that cannot be used (503: a server set-up problem)

app.http maps each of them to its answer once, for every route; the math and model modules
raise them without knowing about HTTP. Every client error has one shape:
{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def detail(loc: Sequence[str | int], msg: str, type_: str) -> dict[str, Any]:
    """One item of an error answer's "detail" list."""
    return {"loc": list(loc), "msg": msg, "type": type_}


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


class InputError(ValueError):
    """A request that is well-formed JSON but asks for something the API cannot do (422, loc body.field)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class ModelError(Exception):
    """The model directory cannot be used; the message says why (a server set-up problem: 503)."""
