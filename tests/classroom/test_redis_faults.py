"""Rooms through a Redis that goes away: a real app process and a real redis-server, killed (and started
again with nothing in it) or frozen (SIGSTOP). While Redis is away every room call answers 503 naming it,
in seconds, and every socket is told and closed so that its page connects again; once Redis is back the
presenter opens its room again (same code, same key) and the followers carry on in it, their counts
right (never counted twice)."""

from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from app.classroom import broker
from tests.classroom.conftest import TOKEN, app_process, auth, start_redis
from tests.servers import free_port

STATE = {"chapter": "steps", "example": "the-cat-ate-its-fish", "step": "softmax", "mask": "full", "focus": "3"}
PRESENTER = "attention3d.presenter"


def call(method: str, url: str, body: Any = None, secret: str | None = None) -> tuple[int, Any, dict[str, str]]:
    """(status, JSON body or None, headers); an error status is returned, not raised."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json", **(auth(secret) if secret else {})}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None, dict(r.headers)
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None, dict(e.headers)


def socket_of(base: str, code: str, key: str | None = None) -> ClientConnection:
    """A room's socket: a presenter's (offering its key) or a follower's."""
    url = base.replace("http", "ws") + f"/api/rooms/{code}/ws"
    protocols: Any = [PRESENTER, f"key.{key}"] if key else None
    return connect(url, subprotocols=protocols, open_timeout=10)


def messages_until_closed(ws: ClientConnection, seconds: float) -> tuple[list[dict[str, Any]], int | None]:
    """Every message the socket gets until the server closes it (at most `seconds`), and its close code."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    try:
        while True:
            got.append(json.loads(ws.recv(timeout=max(0.01, deadline - time.monotonic()))))
    except ConnectionClosed as e:
        return got, e.rcvd.code if e.rcvd else None


def until(ws: ClientConnection, field: str, seconds: float = 10) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        message: dict[str, Any] = json.loads(ws.recv(timeout=max(0.01, deadline - time.monotonic())))
        if field in message:
            return message


@contextmanager
def room_on_redis(tmp_path: Path) -> Iterator[tuple[str, int, Any, dict[str, Any]]]:
    """An app process on a redis-server of its own: (base URL, Redis's port, Redis's process in a list so a
    test can replace it, the room)."""
    port = free_port()
    procs = [start_redis(port)]
    try:
        url = f"redis://127.0.0.1:{port}/0"
        with app_process(tmp_path, ATTENTION_REDIS_URL=url, ATTENTION_VOTES_PER_ADDRESS="0") as (base, _):
            status, room, _ = call("POST", base + "/api/rooms", secret=TOKEN)
            assert status == 201
            assert call("PUT", f"{base}/api/rooms/{room['code']}/state", STATE, room["presenter_key"])[0] == 204
            yield base, port, procs, room
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def assert_503_naming_redis(status: int, body: Any, headers: dict[str, str], took: float) -> None:
    assert status == 503, (status, body)
    assert "Redis" in body["detail"][0]["msg"] and body["detail"][0]["type"] == "room_store_unavailable"
    assert headers.get("retry-after") == "2"
    assert took < broker.REDIS_DEADLINE_SECONDS + 1.5, took  # an answer in seconds, never a wait without end


def test_a_room_comes_back_after_redis_restarts_empty(tmp_path: Path) -> None:
    with room_on_redis(tmp_path) as (base, port, procs, room), ExitStack() as stack:
        code, key = room["code"], room["presenter_key"]
        presenter = stack.enter_context(socket_of(base, code, key))
        assert json.loads(presenter.recv(timeout=10))["state"] == STATE
        presenter.send(json.dumps({"driving": True}))  # its page: the room shows its view
        assert until(presenter, "presenters")["presenters"] == 1
        followers = [stack.enter_context(socket_of(base, code)) for _ in range(3)]
        for ws in followers:
            hello = json.loads(ws.recv(timeout=10))
            assert hello["state"] == STATE and hello["presenters"] == 1

        procs[0].kill()  # Redis is gone, and all it held
        procs[0].wait(timeout=10)
        killed = time.monotonic()
        for ws in (presenter, *followers):  # every socket is told, then closed: its page connects again
            got, close = messages_until_closed(ws, broker.WATCH_EVERY + broker.REDIS_DEADLINE_SECONDS + 2)
            assert got[-1] == {"lost": "the classroom server lost its room store, reconnecting"}, got
            assert close == 1013
        assert time.monotonic() - killed < broker.WATCH_EVERY + broker.REDIS_DEADLINE_SECONDS + 2

        for method, path, body, secret in [
            ("GET", f"/api/rooms/{code}", None, None),
            ("PUT", f"/api/rooms/{code}/state", {**STATE, "step": "mix"}, key),
            ("POST", "/api/rooms", None, TOKEN),
            ("POST", f"/api/rooms/{code}/quiz", {"question": "steps.share"}, key),
            ("GET", f"/api/rooms/{code}/quiz/summary", None, key),
            ("PUT", f"/api/rooms/{code}", {"presenter_key": key}, TOKEN),
        ]:
            started = time.monotonic()
            status, answer, headers = call(method, base + path, body, secret)
            assert_503_naming_redis(status, answer, headers, time.monotonic() - started)
        with socket_of(base, code) as ws:  # a socket that comes now is told the same, and closed
            got, close = messages_until_closed(ws, 10)
            assert got == [{"lost": "the classroom server lost its room store, reconnecting"}] and close == 1013
        assert call("GET", base + "/api/examples")[0] == 200  # the rest of the app serves as usual

        procs.append(start_redis(port))  # back, with nothing in it: the room is gone
        deadline = time.monotonic() + 10
        while (answer := call("GET", f"{base}/api/rooms/{code}"))[0] == 503:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert answer[0] == 404
        with socket_of(base, code) as ws:  # a follower that comes back finds no room, and is told so
            got, close = messages_until_closed(ws, 10)
            assert "there is no room" in got[0]["missing"] and close == 4404

        # the presenter's page opens its room again: the same code and key
        reopened = time.monotonic()
        assert call("PUT", f"{base}/api/rooms/{code.lower()}", {"presenter_key": key}, TOKEN)[0] == 201
        moved = {**STATE, "step": "mix", "focus": "1"}
        assert call("PUT", f"{base}/api/rooms/{code}/state", moved, key)[0] == 204
        with ExitStack() as again:
            presenter = again.enter_context(socket_of(base, code, key))
            assert json.loads(presenter.recv(timeout=10))["state"] == moved
            presenter.send(json.dumps({"driving": True}))
            assert until(presenter, "presenters")["presenters"] == 1
            followers = [again.enter_context(socket_of(base, code)) for _ in range(3)]
            for ws in followers:
                hello = json.loads(ws.recv(timeout=10))
                assert hello["state"] == moved and hello["presenters"] == 1
            assert time.monotonic() - reopened < 10
            while until(presenter, "followers")["followers"] != 3:
                pass
            status, info, _ = call("GET", f"{base}/api/rooms/{code}")
            assert (status, info["followers"], info["presenters"]) == (200, 3, 1)
            last = {**moved, "step": "softmax"}
            assert call("PUT", f"{base}/api/rooms/{code}/state", last, key)[0] == 204
            for ws in followers:
                assert until(ws, "state")["state"] == last

        # opening it again is harmless; another key may not take it; the teacher token is needed
        assert call("PUT", f"{base}/api/rooms/{code}", {"presenter_key": key}, TOKEN)[0] == 204
        assert call("PUT", f"{base}/api/rooms/{code}", {"presenter_key": "x" * 32}, TOKEN)[0] == 409
        assert call("PUT", f"{base}/api/rooms/{code}", {"presenter_key": key}, key)[0] == 403
        assert call("PUT", f"{base}/api/rooms/ZZZ", {"presenter_key": key}, TOKEN)[0] == 422


def test_a_frozen_redis_answers_503_in_seconds_and_counts_stay_right(tmp_path: Path) -> None:
    """SIGSTOP on redis-server: nothing answers, nothing refuses. Calls end in 503 within the deadline,
    the sockets are told; after SIGCONT the room is still there (Redis kept it) and its pages, connected
    again, are counted once."""
    with room_on_redis(tmp_path) as (base, _, procs, room), ExitStack() as stack:
        code, key = room["code"], room["presenter_key"]
        followers = [stack.enter_context(socket_of(base, code)) for _ in range(4)]
        for ws in followers:
            json.loads(ws.recv(timeout=10))
        deadline = time.monotonic() + 10
        while call("GET", f"{base}/api/rooms/{code}")[1]["followers"] != 4:
            assert time.monotonic() < deadline
            time.sleep(0.1)

        procs[0].send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            status, answer, headers = call("PUT", f"{base}/api/rooms/{code}/state", STATE, key)
            assert_503_naming_redis(status, answer, headers, time.monotonic() - started)
            for ws in followers:
                got, close = messages_until_closed(ws, broker.WATCH_EVERY + 2 * broker.REDIS_DEADLINE_SECONDS + 2)
                assert got[-1]["lost"] and close == 1013
        finally:
            procs[0].send_signal(signal.SIGCONT)

        deadline = time.monotonic() + 10
        while (answer := call("GET", f"{base}/api/rooms/{code}"))[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        with ExitStack() as again:  # the same pages come back (Redis kept the room and its old counts)
            back = [again.enter_context(socket_of(base, code)) for _ in range(4)]
            for ws in back:
                assert json.loads(ws.recv(timeout=10))["state"] == STATE
            while (count := until(back[0], "followers")["followers"]) != 4:
                assert count < 4, count  # never 8: the counts are this process's sockets, written whole
            assert call("GET", f"{base}/api/rooms/{code}")[1]["followers"] == 4
        deadline = time.monotonic() + 5
        while call("GET", f"{base}/api/rooms/{code}")[1]["followers"] != 0:  # all gone: counted out
            assert time.monotonic() < deadline
            time.sleep(0.1)


@pytest.mark.full  # the docs' AOF set-up at work (make test-all): Redis's own feature, no code of ours
def test_with_aof_a_killed_redis_loses_no_room(tmp_path: Path) -> None:
    """docs/school-server.md's AOF set-up (--appendonly yes --appendfsync everysec): redis-server killed
    with SIGKILL and started again on the same folder keeps the room, its view and its quiz summary."""
    port = free_port()
    aof = ["--appendonly", "yes", "--appendfsync", "everysec", "--dir", str(tmp_path / "redis")]
    (tmp_path / "redis").mkdir()
    procs = [start_redis(port, *aof)]
    try:
        url = f"redis://127.0.0.1:{port}/0"
        with app_process(tmp_path / "app", ATTENTION_REDIS_URL=url) as (base, _):
            _, room, _ = call("POST", base + "/api/rooms", secret=TOKEN)
            code, key = room["code"], room["presenter_key"]
            assert call("PUT", f"{base}/api/rooms/{code}/state", STATE, key)[0] == 204
            _, quiz, _ = call("POST", f"{base}/api/rooms/{code}/quiz", {"question": "steps.share"}, key)
            assert call("POST", f"{base}/api/rooms/{code}/quiz/reveal", None, key)[0] == 200
            procs[0].kill()
            procs[0].wait(timeout=10)
            procs.append(start_redis(port, *aof))
            deadline = time.monotonic() + 10
            while (answer := call("GET", f"{base}/api/rooms/{code}"))[0] == 503:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert answer[:2] == (200, {"state": STATE, "followers": 0, "presenters": 0})
            rows = call("GET", f"{base}/api/rooms/{code}/quiz/summary", secret=key)[1]["rows"]
            assert [row["id"] for row in rows] == [quiz["id"]]
            with socket_of(base, code) as ws:
                assert json.loads(ws.recv(timeout=10))["state"] == STATE
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


@pytest.mark.full  # the same 'lost' path as a Redis that goes away mid-room (tested above), at start
def test_sockets_refused_while_redis_is_down_at_start(tmp_path: Path) -> None:
    """An app whose Redis is not there when the first socket comes: the socket is told, not left waiting."""
    port = free_port()
    with app_process(tmp_path, ATTENTION_REDIS_URL=f"redis://127.0.0.1:{port}/0") as (base, _):
        started = time.monotonic()
        with socket_of(base, "ABCDEF") as ws:
            got, close = messages_until_closed(ws, 10)
        assert got == [{"lost": "the classroom server lost its room store, reconnecting"}] and close == 1013
        assert time.monotonic() - started < broker.REDIS_DEADLINE_SECONDS + 2
        status, answer, headers = call("POST", base + "/api/rooms", secret=TOKEN)
        assert_503_naming_redis(status, answer, headers, 0)
