"""Routes of the classroom's rooms: a teacher's view followed live by phones.

POST   /api/rooms                        teacher token → 201 {code, presenter_key, join_url}
GET    /api/rooms/{code}                 → {state, followers}
PUT    /api/rooms/{code}/state           presenter key, a view state → 204
DELETE /api/rooms/{code}                 presenter key → 204 (followers are told the room closed)
GET    /api/rooms/{code}/qr.svg          the join address as a QR code
POST   /api/rooms/{code}/reset           presenter key → 204 (no quiz, an empty quiz summary; the view stays)
WS     /api/rooms/{code}/ws              {state, followers} then every change; followers may only vote
GET    /api/teacher                      teacher token → 204 (is this token right?)

The quiz and the class reports have their own routes (app.web.quiz), as have saved lessons
(app.web.lessons); bodies are read by app.web.http.
"""

from __future__ import annotations

import json

import anyio
from fastapi import APIRouter, Path, Request, Response, WebSocket

from app.classroom import auth, limits, qr, quiz, rooms
from app.classroom.broker import Broker, RoomLimit
from app.classroom.schemas import CreatedRoom, RoomInfo, ViewState
from app.classroom.service import classroom, lifespan
from app.errors import ClientError
from app.web import auth as web_auth
from app.web import socket
from app.web.http import body_doc, error_docs, json_body

router = APIRouter(prefix="/api", tags=["classroom"], lifespan=lifespan)
auth.hide_tokens_in_logs()  # the teacher link's ?token= never reaches uvicorn's access log

_AUTH = error_docs(401, 403)
_ROOM = error_docs(s404="No such room (closed, expired or never opened).")
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
    responses={**_AUTH, **error_docs(s429=f"{limits.MAX_ROOMS} rooms are open already.")},
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
    return RoomInfo(state=None if state is None else json.loads(state), followers=await broker.followers(code))


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
    state = await json_body(request, ViewState, limits.MAX_STATE_BYTES)
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
