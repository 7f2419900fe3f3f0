"""The teacher token and a room's presenter key, read from a request's `Authorization: Bearer …` header
(the secrets themselves, compared in constant time: app.classroom.auth)."""

from __future__ import annotations

from fastapi import Request

from app.classroom import auth, rooms
from app.classroom.broker import Broker
from app.errors import ClientError


def bearer(request: Request, what: str) -> str:
    """The Bearer credential of a request; 401 without one."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        msg = f"send the {what} as 'Authorization: Bearer …'"
        raise ClientError(401, ["header", "authorization"], msg, "unauthorized")
    return value.strip()


def require_teacher(request: Request) -> None:
    """401 without a token, 403 with a wrong one."""
    if not auth.same(bearer(request, "teacher token"), auth.teacher_token()):
        raise ClientError(403, ["header", "authorization"], "that is not this server's teacher token", "forbidden")


async def require_presenter(request: Request, broker: Broker, code: str) -> None:
    """401/403/404: the request must carry room `code`'s presenter key (or the teacher token)."""
    await rooms.check_presenter(broker, code, bearer(request, "presenter key"))
