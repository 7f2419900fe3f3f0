"""A room's WebSocket: accepted for the room's presenter or a follower, the room's messages out in order,
votes and pings in (nothing else), each client held to the classroom's limits. While the room store
(Redis) is away a socket hears {"lost"} and is closed with 1013 (its page connects again)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from fastapi import WebSocket, WebSocketDisconnect
from starlette.websockets import WebSocketState

from app.classroom import limits, quiz, rooms
from app.classroom.broker import LOST_MESSAGE, Broker, StoreDown, Subscriber, new_seat
from app.web.security import same_origin


def _offered(ws: WebSocket) -> str | None:
    """The presenter's subprotocol, when the client offered it: a browser fails a handshake that does not
    pick one of the protocols it offered, and its page would never read why the socket was refused."""
    return rooms.PRESENTER_PROTOCOL if rooms.PRESENTER_PROTOCOL in (ws.scope.get("subprotocols") or []) else None


async def _refuse(ws: WebSocket, code: int, error: dict[str, Any] | str) -> None:
    if ws.client_state == WebSocketState.CONNECTING:
        await ws.accept(subprotocol=_offered(ws))
    await ws.send_text(error if isinstance(error, str) else json.dumps(error))
    await ws.close(code=code)


async def serve_socket(ws: WebSocket, broker: Broker, code: str) -> None:
    """One socket of a room: the room's messages out, in order; votes and pings in (nothing else)."""
    if not same_origin(ws.headers):  # another site's page may not join on its visitor's behalf
        await ws.close(code=rooms.CLOSE_ORIGIN)
        return
    sub: Subscriber | None = None
    try:
        if not broker.ready():
            raise StoreDown("not subscribed to Redis")
        digest = await broker.room_key(code)
        if digest is None:
            missing = f"there is no room {code[:12]} (closed, expired or never opened)"
            await _refuse(ws, rooms.CLOSE_NO_ROOM, {"missing": missing})
            return
        address = ws.client.host if ws.client else ""
        offered = list(ws.scope.get("subprotocols") or [])
        presenter = rooms.presenter_socket(offered, digest)
        seat = None if presenter else rooms.kept_seat(offered, code)  # a page that comes back keeps its seat
        joining = Subscriber(presenter=presenter, address=address, id=seat or new_seat())
        refused = await broker.join(code, joining)
        if refused:
            await _refuse(ws, rooms.CLOSE_FULL, {"error": refused})
            return
        sub = joining
        follower = rooms.FOLLOWER_PROTOCOL if rooms.FOLLOWER_PROTOCOL in offered else None
        await ws.accept(subprotocol=rooms.PRESENTER_PROTOCOL if sub.presenter else follower)
        await ws.send_text(await broker.hello(code, sub.presenter, sub.id))
        sender = asyncio.create_task(_send(ws, sub))
        try:
            close = await _receive(ws, broker, code, sub)
        finally:
            sender.cancel()
        if close is not None:
            await ws.close(code=close[0], reason=close[1])
    except StoreDown:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):  # the client may be gone
            await _refuse(ws, rooms.CLOSE_SLOW, LOST_MESSAGE)
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass  # the client went away (RuntimeError, OSError: it went while we were sending)
    finally:
        if sub is not None:
            with contextlib.suppress(StoreDown):  # counted again when Redis is back (RedisBroker._recount)
                await broker.leave(code, sub)


async def _send(ws: WebSocket, sub: Subscriber) -> None:
    try:
        while True:
            text = await sub.queue.get()
            if sub.overflow:
                await ws.close(code=rooms.CLOSE_SLOW, reason="too far behind: reconnect to catch up")
                return
            await ws.send_text(text)
            if text.startswith('{"closed"'):
                await ws.close(code=rooms.CLOSE_NO_ROOM, reason="room closed")
                return
            if text == LOST_MESSAGE:
                await ws.close(code=rooms.CLOSE_SLOW, reason="room store lost: connect again")
                return
    except (WebSocketDisconnect, RuntimeError, OSError):
        return


async def _receive(ws: WebSocket, broker: Broker, code: str, sub: Subscriber) -> tuple[int, str] | None:
    """Read the client's messages until it leaves; (close code, reason) when it broke a rule. A follower
    may vote and ping; a presenter may ping and say {"driving": true} (the room shows its page's view)."""
    tokens, last = float(limits.SOCKET_BURST), time.monotonic()
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return None
        data = message.get("text") or message.get("bytes") or ""
        if len(data) > limits.MAX_SOCKET_MESSAGE_BYTES:
            return rooms.CLOSE_TOO_BIG, f"messages are at most {limits.MAX_SOCKET_MESSAGE_BYTES} bytes"
        now = time.monotonic()
        tokens = min(limits.SOCKET_BURST, tokens + (now - last) * limits.MAX_SOCKET_MESSAGES_PER_SECOND)
        last = now
        if tokens < 1:
            return rooms.CLOSE_RATE, f"at most {limits.MAX_SOCKET_MESSAGES_PER_SECOND} messages a second"
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
        elif body.get("driving") is True and sub.presenter:
            await broker.drive(code, sub)  # its page made the room show its view: the followers may say live
        else:
            msg = "a follower's socket only votes and pings; the presenter drives the room over HTTP"
            sub.put(json.dumps({"error": {"type": "read_only", "msg": msg}}))
