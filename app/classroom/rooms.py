"""Rooms: their codes, the address followers join by, and one follower's (or presenter's) socket."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import secrets
import socket
import time
from typing import Any
from urllib.parse import urlsplit

from fastapi import Request, WebSocket, WebSocketDisconnect

from app.classroom import auth, limits, quiz
from app.classroom.broker import Broker, Subscriber
from app.errors import ClientError
from app.security import same_origin

# easy to read aloud and to type: no 0/O, 1/I/L (the code is upper case; lower case is accepted)
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
BIND_ENV = "ATTENTION_BIND_HOST"  # set by `attention3d --host`
PUBLIC_ENV = "ATTENTION_PUBLIC_URL"  # e.g. http://classroom.school.lan:8000 when students use another name
PRESENTER_PROTOCOL = "attention3d.presenter"
KEY_PROTOCOL = "key."  # a presenter's socket offers "attention3d.presenter" and "key.<presenter key>"

CLOSE_NO_ROOM = 4404
CLOSE_FULL = 4409
CLOSE_RATE = 4429
CLOSE_TOO_BIG = 1009
CLOSE_SLOW = 1013
CLOSE_ORIGIN = 4403


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(code: str) -> str:
    """The code as stored: upper case, without the spaces or dashes a student may type."""
    return code.strip().upper().replace("-", "").replace(" ", "")[:32]


def lan_address() -> str | None:
    """This machine's address on the LAN (the one its default route uses), or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET: no packet is sent, this only picks a route
            address = str(s.getsockname()[0])
    except OSError:
        return None
    return None if ipaddress.ip_address(address).is_loopback else address


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def join_base(request: Request) -> str:
    """The address students reach this server by: $ATTENTION_PUBLIC_URL, else the Host the teacher
    used, except that a loopback Host (127.0.0.1, localhost) becomes the LAN address when the server
    listens on every interface (--host 0.0.0.0)."""
    public = os.environ.get(PUBLIC_ENV)
    if public:
        return public.rstrip("/")
    parts = urlsplit(f"//{request.headers.get('host') or request.url.netloc}")
    host, port = parts.hostname or "127.0.0.1", parts.port
    if _loopback(host) and os.environ.get(BIND_ENV) in ("0.0.0.0", "::"):
        host = lan_address() or host
    if ":" in host:
        host = f"[{host}]"
    return f"{request.url.scheme}://{host}" + (f":{port}" if port else "")


def join_url(request: Request, code: str) -> str:
    return f"{join_base(request)}/?room={code}"


async def presenter_room(request: Request, broker: Broker, code: str) -> None:
    """401/403/404: the request must carry this room's presenter key (or the teacher token)."""
    given = auth.bearer(request, "presenter key")
    digest = await broker.room_key(code)
    if digest is None:
        raise ClientError(404, ["path", "code"], f"no room {code[:12]!r} (closed, expired or never opened)", "no_room")
    if not (auth.key_matches(given, digest) or auth.same(given, auth.teacher_token())):
        raise ClientError(403, ["header", "authorization"], "that is not this room's presenter key", "forbidden")


def _presenter_socket(ws: WebSocket, digest: str) -> bool:
    offered: list[str] = list(ws.scope.get("subprotocols") or [])
    keys = [p[len(KEY_PROTOCOL) :] for p in offered if p.startswith(KEY_PROTOCOL)]
    return PRESENTER_PROTOCOL in offered and any(auth.key_matches(k, digest) for k in keys)


async def _refuse(ws: WebSocket, code: int, error: dict[str, Any]) -> None:
    await ws.accept()
    await ws.send_text(json.dumps(error))
    await ws.close(code=code)


async def serve_socket(ws: WebSocket, broker: Broker, code: str) -> None:
    """One socket of a room: the room's messages out, in order; votes and pings in (nothing else)."""
    if not same_origin(ws.headers):  # another site's page may not join on its visitor's behalf
        await ws.close(code=CLOSE_ORIGIN)
        return
    digest = await broker.room_key(code)
    if digest is None:
        await _refuse(ws, CLOSE_NO_ROOM, {"closed": f"there is no room {code[:12]} (closed, expired or never opened)"})
        return
    address = ws.client.host if ws.client else ""
    sub = Subscriber(presenter=_presenter_socket(ws, digest), address=address)
    refused = await broker.join(code, sub)
    if refused:
        await _refuse(ws, CLOSE_FULL, {"error": refused})
        return
    try:
        await ws.accept(subprotocol=PRESENTER_PROTOCOL if sub.presenter else None)
        await ws.send_text(await broker.hello(code, sub.presenter, sub.id))
        sender = asyncio.create_task(_send(ws, sub))
        try:
            close = await _receive(ws, broker, code, sub)
        finally:
            sender.cancel()
        if close is not None:
            await ws.close(code=close[0], reason=close[1])
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass  # the client went away (RuntimeError, OSError: it went while we were sending)
    finally:
        await broker.leave(code, sub)


async def _send(ws: WebSocket, sub: Subscriber) -> None:
    try:
        while True:
            text = await sub.queue.get()
            if sub.overflow:
                await ws.close(code=CLOSE_SLOW, reason="too far behind: reconnect to catch up")
                return
            await ws.send_text(text)
            if text.startswith('{"closed"'):
                await ws.close(code=CLOSE_NO_ROOM, reason="room closed")
                return
    except (WebSocketDisconnect, RuntimeError, OSError):
        return


async def _receive(ws: WebSocket, broker: Broker, code: str, sub: Subscriber) -> tuple[int, str] | None:
    """Read the client's messages until it leaves; (close code, reason) when it broke a rule."""
    tokens, last = float(limits.SOCKET_BURST), time.monotonic()
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return None
        data = message.get("text") or message.get("bytes") or ""
        if len(data) > limits.MAX_SOCKET_MESSAGE_BYTES:
            return CLOSE_TOO_BIG, f"messages are at most {limits.MAX_SOCKET_MESSAGE_BYTES} bytes"
        now = time.monotonic()
        tokens = min(limits.SOCKET_BURST, tokens + (now - last) * limits.MAX_SOCKET_MESSAGES_PER_SECOND)
        last = now
        if tokens < 1:
            return CLOSE_RATE, f"at most {limits.MAX_SOCKET_MESSAGES_PER_SECOND} messages a second"
        tokens -= 1
        try:
            body = json.loads(data)
        except ValueError:
            sub.put(json.dumps({"error": {"type": "json", "msg": "send JSON objects"}}))
            continue
        if not isinstance(body, dict):
            sub.put(json.dumps({"error": {"type": "json", "msg": "send JSON objects"}}))
        elif "ping" in body:
            sub.put('{"pong":1}')
        elif "vote" in body and not sub.presenter:
            sub.put(await quiz.vote(broker, code, sub, body["vote"]))
        else:
            msg = "a follower's socket only votes and pings; the presenter drives the room over HTTP"
            sub.put(json.dumps({"error": {"type": "read_only", "msg": msg}}))
