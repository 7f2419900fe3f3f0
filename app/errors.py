"""The app's own errors, in a leaf module: it imports nothing from app and nothing from the web.

  ClientError   a 4xx answer whose detail names the field (loc) and the rule
  InputError    a request that is well-formed but asks for what cannot be done (422, in the body)
  ModelError    a model directory that cannot be used (503: a server set-up problem)
  in_range()    a model's layer or head checked (an InputError naming the field)

app.web.http maps each of them to its answer once, for every route; the math and model modules
raise them without knowing about HTTP. Every client error has one shape:
{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def detail(
    loc: Sequence[str | int], msg: str, type_: str, ctx: Mapping[str, int | str] | None = None
) -> dict[str, Any]:
    """One item of an error answer's "detail" list; `ctx` holds the numbers in `msg` (as pydantic's
    errors do), so that a page can write the same message in its own language (static/i18n: error.<type>)."""
    item: dict[str, Any] = {"loc": list(loc), "msg": msg, "type": type_}
    if ctx:
        item["ctx"] = dict(ctx)
    return item


class ClientError(Exception):
    """A 4xx answer whose detail names the field (loc) and the rule."""

    def __init__(
        self, status: int, loc: Sequence[str | int], msg: str, type_: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(msg)
        self.status, self.items = status, [detail(loc, msg, type_)]
        self.headers = headers  # e.g. Retry-After on a 503, the current ETag on a 412

    @classmethod
    def of(cls, status: int, items: list[dict[str, Any]]) -> ClientError:
        """A ClientError carrying several detail items at once (e.g. a FrameError's)."""
        first = items[0]
        out = cls(status, first["loc"], first["msg"], first["type"])
        out.items = [detail(i["loc"], i["msg"], i["type"]) for i in items]
        return out


class InputError(ValueError):
    """A request that is well-formed but asks for something the API cannot do (422, loc [where, field]).

    A ValueError, so that the notebook's callers can catch it as one; `type_` is the error's type in
    the answer, `where` the part of the request the field is in ("body", "query").
    """

    def __init__(
        self,
        field: str,
        message: str,
        type_: str = "value_error",
        where: str = "body",
        ctx: Mapping[str, int | str] | None = None,
    ) -> None:
        super().__init__(message)
        self.field, self.message, self.type, self.where = field, message, type_, where
        self.ctx = ctx  # the numbers in the message, by name (see detail)


class ModelError(Exception):
    """The model directory cannot be used; the message says why (a server set-up problem: 503)."""


def in_range(field: str, value: object, count: int, model: str, others: str = "") -> None:
    """A 422 naming `field` unless a whole-number value is 0 … count − 1 (a model's layer or head).

    Other values ("mean", None) are the caller's to read; `others` names them in the message.
    """
    if isinstance(value, int) and not 0 <= value < count:
        raise InputError(field, f"{field} must be 0 … {count - 1}{others} ({model} has {count})")
