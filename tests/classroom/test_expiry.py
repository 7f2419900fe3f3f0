"""Rooms expire at the documented time (ROOM_TTL_SECONDS after they were opened or last driven),
in memory and in storage, on a clock the test moves."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.classroom import broker, limits
from app.classroom.service import classroom
from tests.classroom.conftest import TOKEN, auth

STATE = {"chapter": "steps", "example": "the-cat-ate-its-fish", "step": "mix", "mask": "full"}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(broker, "clock", fake)
    return fake


def _next_other_than_counts(ws: Any) -> Any:
    """The socket's next message that is not a follower count (a count may come at any time)."""
    while "followers" in (message := ws.receive_json()):
        pass
    return message


def test_a_room_expires_at_its_time(client: TestClient, clock: Clock) -> None:
    ttl = limits.ROOM_TTL_SECONDS
    assert ttl == 12 * 3600  # the documented 12 hours
    room: dict[str, Any] = client.post("/api/rooms", headers=auth(TOKEN)).json()
    code, key = room["code"], room["presenter_key"]
    memory = classroom(client.app).broker
    assert isinstance(memory, broker.MemoryBroker)
    clock.now += ttl - 60
    assert client.put(f"/api/rooms/{code}/state", json=STATE, headers=auth(key)).status_code == 204  # driven: kept
    clock.now += ttl - 1
    assert client.get(f"/api/rooms/{code}").status_code == 200
    with client.websocket_connect(f"/api/rooms/{code}/ws") as ws:
        ws.receive_json()
        clock.now += 2  # 12 hours and a second since it was last driven
        assert client.get(f"/api/rooms/{code}").status_code == 404
        assert _next_other_than_counts(ws) == {"closed": "this room expired", "why": "expired"}
    assert code not in memory.rooms  # its memory is freed
    assert memory.store.load_room(code) is None  # and its row is gone
    assert client.put(f"/api/rooms/{code}/state", json=STATE, headers=auth(key)).status_code == 404
    with client.websocket_connect(f"/api/rooms/{code}/ws") as ws:
        assert "missing" in ws.receive_json()  # its followers wait a while, then give up


def test_rooms_nobody_asks_for_are_swept(client: TestClient, clock: Clock) -> None:
    token = TOKEN
    codes = [client.post("/api/rooms", headers=auth(token)).json()["code"] for _ in range(3)]
    memory = classroom(client.app).broker
    assert isinstance(memory, broker.MemoryBroker)
    assert set(codes) <= set(memory.rooms)
    clock.now += limits.ROOM_TTL_SECONDS
    client.post("/api/rooms", headers=auth(token))  # opening a room sweeps (as the sweeper does every minute)
    assert not set(codes) & set(memory.rooms)
    assert all(memory.store.load_room(c) is None for c in codes)


def test_followers_of_an_expired_redis_room_are_told(
    client: TestClient, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With Redis the room's keys expire in Redis itself (ATTENTION_ROOM_TTL=2 here): the sockets
    this process holds are told within half a TTL, and the room answers 404."""
    monkeypatch.setenv("ATTENTION_REDIS_URL", redis_url)
    monkeypatch.setenv("ATTENTION_ROOM_TTL", "2")
    room = client.post("/api/rooms", headers=auth(TOKEN)).json()
    code = room["code"]
    assert isinstance(classroom(client.app).broker, broker.RedisBroker)
    with client.websocket_connect(f"/api/rooms/{code}/ws") as ws:
        ws.receive_json()
        while True:  # (the follower count comes first)
            message = ws.receive_json()
            if "closed" in message:
                break
        assert message == {"closed": "this room expired", "why": "expired"}
    assert client.get(f"/api/rooms/{code}").status_code == 404
