"""Routes of the classroom's rooms: a teacher's view followed live by phones.

POST   /api/rooms                        teacher token → 201 {code, presenter_key, join_url}
PUT    /api/rooms/{code}                 teacher token, {presenter_key} → 201 opened again / 204 open already
                                         (a presenter's page whose room was lost with a Redis that restarted empty)
GET    /api/rooms/{code}                 → {state, followers, presenters}
PUT    /api/rooms/{code}/state           presenter key, a view state → 204
DELETE /api/rooms/{code}                 presenter key → 204 (followers are told the room closed)
GET    /api/rooms/{code}/qr.svg          the join address as a QR code
POST   /api/rooms/{code}/reset           presenter key → 204 (no quiz, an empty quiz summary; the view stays)
WS     /api/rooms/{code}/ws              {state, followers} then every change; followers may only vote
GET    /api/teacher                      teacher token → 204 (is this token right?)

While the room store (Redis) can't be reached, every route answers 503 naming it, with Retry-After.

The quiz and the class reports have their own routes (app.web.quiz, whose room routes answer the same
503), as have saved lessons (app.web.lessons); bodies are read by app.web.http.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
from fastapi import APIRouter, Path, Request, Response, WebSocket
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from app.classroom import auth, limits, qr, quiz, rooms
from app.classroom.broker import Broker, RoomLimit, StoreDown
from app.classroom.schemas import CreatedRoom, ReopenedRoom, RoomInfo, RoomReopen, ViewState
from app.classroom.service import classroom, lifespan
from app.errors import ClientError, detail
from app.web import auth as web_auth
from app.web import socket
from app.web.http import body_doc, error_docs, json_body

log = logging.getLogger(__name__)
STORE_DOWN = "the classroom server can't reach its room store (Redis) right now: rooms come back when it does"
RETRY_AFTER = "2"  # seconds


class RoomRoute(APIRoute):
    """A room route whose room store (Redis) is away answers 503 naming it, in one line of log."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                return await handler(request)
            except StoreDown as e:
                log.warning("rooms: %s %s: %s", request.method, request.url.path, e)
                body = {"detail": [detail(["server", "redis"], STORE_DOWN, "room_store_unavailable")]}
                return JSONResponse(body, status_code=503, headers={"retry-after": RETRY_AFTER})

        return guarded


router = APIRouter(prefix="/api", tags=["classroom"], lifespan=lifespan, route_class=RoomRoute)
auth.hide_tokens_in_logs()  # the teacher link's ?token= never reaches uvicorn's access log

_AUTH = error_docs(401, 403)
_DOWN = error_docs(s503="The room store (Redis) can't be reached now (Retry-After).")
_ROOM = {**error_docs(s404="No such room (closed, expired or never opened)."), **_DOWN}
_BAD = error_docs(413, 415, 422)
_TOO_OFTEN = error_docs(s429=f"More than {limits.MAX_PUTS_PER_SECOND} changes a second.")
Code = Path(max_length=32, description="the room's code (case and dashes do not matter)")


async def _presenters_room(request: Request, code: str) -> tuple[Broker, str]:
    """The broker and the normalised code of a room this request presents (401/403/404 otherwise)."""
    code = rooms.normal_code(code)
    broker = classroom(request.app).broker
    await web_auth.require_presenter(request, broker, code)
    return broker, code


def _join_url(request: Request, code: str) -> str:
    """The address a room's followers open, as the teacher's own request reached this server."""
    return f"{rooms.join_base(request.headers.get('host') or request.url.netloc, request.url.scheme)}/?room={code}"


@router.get("/teacher", status_code=204, summary="Check a teacher token", responses=_AUTH)
def check_teacher(request: Request) -> Response:
    web_auth.require_teacher(request)
    return Response(status_code=204)


@router.post(
    "/rooms",
    status_code=201,
    response_model=CreatedRoom,
    summary="Open a room",
    responses={**_AUTH, **error_docs(s429=f"{limits.MAX_ROOMS} rooms are open already."), **_DOWN},
)
async def create_room(request: Request) -> CreatedRoom:
    """Needs the teacher token. The presenter key drives this room only: keep it in the presenter's tab."""
    web_auth.require_teacher(request)
    broker = classroom(request.app).broker
    key = auth.new_secret()
    try:
        for _ in range(20):
            code = rooms.new_code()
            if await broker.create_room(code, auth.digest(key)):
                break
        else:  # pragma: no cover - 31⁶ codes
            raise ClientError(503, ["body"], "no free room code, try again", "busy")
    except RoomLimit:
        msg = f"{limits.MAX_ROOMS} rooms are open on this server: close one first"
        raise ClientError(429, ["body"], msg, "room_limit") from None
    return CreatedRoom(code=code, presenter_key=key, join_url=_join_url(request, code))


@router.put(
    "/rooms/{code}",
    status_code=201,
    response_model=ReopenedRoom,
    summary="Open a room again, with its code and presenter key",
    responses={
        204: {"description": "The room is open already, with this presenter key."},
        **_AUTH,
        **_BAD,
        **error_docs(
            s409="The room is open with another presenter key.",
            s429=f"{limits.MAX_ROOMS} rooms are open already.",
        ),
        **_DOWN,
    },
    openapi_extra=body_doc(RoomReopen),
)
async def reopen_room(request: Request, code: str = Code) -> Response:
    """Needs the teacher token. For a presenter's page whose room was lost (a Redis that restarted with
    nothing in it): the same code and key, so that the class's pages, waiting for it, carry on."""
    web_auth.require_teacher(request)
    code = rooms.normal_code(code)
    if not rooms.valid_code(code):
        raise ClientError(422, ["path", "code"], f"a room code is {rooms.CODE_LENGTH} of {rooms.ALPHABET}", "code")
    asked = await json_body(request, RoomReopen, 1024)
    try:
        opened = await classroom(request.app).broker.reopen(code, auth.digest(asked.presenter_key))
    except RoomLimit:
        msg = f"{limits.MAX_ROOMS} rooms are open on this server: close one first"
        raise ClientError(429, ["body"], msg, "room_limit") from None
    if opened is None:
        raise ClientError(409, ["path", "code"], f"room {code} is open with another presenter key", "room_taken")
    if not opened:
        return Response(status_code=204)
    reopened = ReopenedRoom(code=code, join_url=_join_url(request, code))
    return Response(reopened.model_dump_json(), status_code=201, media_type="application/json")


async def _existing(request: Request, code: str) -> str:
    code = rooms.normal_code(code)
    if await classroom(request.app).broker.room_key(code) is None:
        raise ClientError(404, ["path", "code"], f"no room {code[:12]!r} (closed, expired or never opened)", "no_room")
    return code


@router.get("/rooms/{code}", response_model=RoomInfo, summary="A room's state and followers", responses=_ROOM)
async def get_room(request: Request, code: str = Code) -> RoomInfo:
    code = await _existing(request, code)
    broker = classroom(request.app).broker
    state, _ = await broker.state(code)
    return RoomInfo(
        state=None if state is None else json.loads(state),
        followers=await broker.followers(code),
        presenters=await broker.presenters(code),
    )


@router.put(
    "/rooms/{code}/state",
    status_code=204,
    summary="Drive the room: the presenter's view",
    responses={**_AUTH, **_ROOM, **_BAD, **_TOO_OFTEN},
    openapi_extra=body_doc(ViewState),
)
async def put_state(request: Request, code: str = Code) -> Response:
    """The page's URL state (≤ 32 kB); every follower gets it at once, in order."""
    code = rooms.normal_code(code)
    room = classroom(request.app)
    await web_auth.require_presenter(request, room.broker, code)
    state = await json_body(request, ViewState, limits.MAX_STATE_BYTES, strict=False)  # numbers as strings
    room.count_put(code)
    await room.broker.set_state(code, json.dumps(state.plain(), ensure_ascii=False, separators=(",", ":")))
    return Response(status_code=204)


@router.delete("/rooms/{code}", status_code=204, summary="Close a room", responses={**_AUTH, **_ROOM})
async def close_room(request: Request, code: str = Code) -> Response:
    broker, code = await _presenters_room(request, code)
    await broker.close_room(code)
    return Response(status_code=204)


@router.get(
    "/rooms/{code}/qr.svg",
    summary="The join address as a QR code (SVG)",
    responses={200: {"content": {"image/svg+xml": {}}}, **_ROOM},
    response_class=Response,
)
async def room_qr(request: Request, code: str = Code) -> Response:
    code = await _existing(request, code)
    svg = await anyio.to_thread.run_sync(qr.svg, _join_url(request, code))
    return Response(svg, media_type="image/svg+xml", headers={"cache-control": "no-cache"})


@router.post(
    "/rooms/{code}/reset",
    status_code=204,
    summary="Reset a room: no quiz running, an empty quiz summary (the view and followers stay)",
    responses={**_AUTH, **_ROOM},
)
async def reset_room(request: Request, code: str = Code) -> Response:
    broker, code = await _presenters_room(request, code)
    await quiz.reset(broker, code)
    return Response(status_code=204)


@router.websocket("/rooms/{code}/ws")
async def room_socket(websocket: WebSocket, code: str) -> None:
    broker = await classroom(websocket.app).ready_broker()
    await socket.serve_socket(websocket, broker, rooms.normal_code(code))
