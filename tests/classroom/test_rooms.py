"""The rooms' HTTP API and WebSocket: every status, the token rules, the order of messages, the limits."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
import segno
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from app.classroom import broker, limits, rooms
from tests.classroom.conftest import TOKEN, auth

STATE = {"chapter": "steps", "example": "the-cat-ate-its-fish", "step": "softmax", "mask": "full", "focus": "3"}


def put(client: TestClient, room: dict[str, Any], state: Any, key: str | None = None) -> Any:
    return client.put(f"/api/rooms/{room['code']}/state", json=state, headers=auth(key or room["presenter_key"]))


def detail(r: Any) -> dict[str, Any]:
    body = r.json()
    assert set(body) == {"detail"} and len(body["detail"]) >= 1, body
    item: dict[str, Any] = body["detail"][0]
    assert set(item) == {"loc", "msg", "type"}
    return item


# the teacher token


def test_opening_a_room_needs_the_teacher_token(client: TestClient) -> None:
    r = client.post("/api/rooms")
    assert r.status_code == 401 and detail(r)["loc"] == ["header", "authorization"]
    assert client.post("/api/rooms", headers={"authorization": "Basic " + TOKEN}).status_code == 401
    r = client.post("/api/rooms", headers=auth(TOKEN + "x"))
    assert r.status_code == 403 and detail(r)["type"] == "forbidden"
    assert TOKEN not in r.text
    r = client.post("/api/rooms", headers=auth(TOKEN))
    assert r.status_code == 201
    body = r.json()
    assert set(body) == {"code", "presenter_key", "join_url"}
    assert re.fullmatch(f"[{rooms.ALPHABET}]{{6}}", body["code"])
    assert not set(body["code"]) & set("0O1Il")
    assert len(body["presenter_key"]) >= 22  # token_urlsafe: ≥ 128 bits
    assert body["join_url"] == f"http://testserver/?room={body['code']}"


def test_teacher_check(client: TestClient) -> None:
    assert client.get("/api/teacher").status_code == 401
    assert client.get("/api/teacher", headers=auth("nope-" * 5)).status_code == 403
    assert client.get("/api/teacher", headers=auth(TOKEN)).status_code == 204


def test_codes_avoid_ambiguous_characters() -> None:
    codes = {rooms.new_code() for _ in range(500)}
    assert len(codes) == 500
    assert not set("".join(codes)) & set("0O1IlL")


# driving a room


def test_put_state_then_get_it(client: TestClient, room: dict[str, Any]) -> None:
    code = room["code"]
    assert client.get(f"/api/rooms/{code}").json() == {"state": None, "followers": 0, "presenters": 0}
    r = put(client, room, STATE)
    assert r.status_code == 204 and r.content == b""
    assert client.get(f"/api/rooms/{code}").json() == {"state": STATE, "followers": 0, "presenters": 0}
    assert client.get(f"/api/rooms/{code.lower()}").json()["state"] == STATE  # codes are read aloud: any case
    numbers = {**STATE, "focus": 4, "layer": 3}  # numbers are taken as the address bar's strings
    assert put(client, room, numbers).status_code == 204
    assert client.get(f"/api/rooms/{code}").json()["state"] == {**STATE, "focus": "4", "layer": "3"}


def test_a_chapters_own_parameters_ride_along(client: TestClient, room: dict[str, Any]) -> None:
    for state in (
        {"chapter": "scaling", "dk": "64", "predict": "1"},
        {"chapter": "heads", "word": "1", "heads": "2", "seed": "7", "tok": ""},
        {"chapter": "projections", "tok": "3", "token": "3"},
        {"chapter": "positions", "words": "the cat ate its fish", "order": "0 4 2 3 1", "layer": "0", "head": "2"},
    ):
        assert put(client, room, state).status_code == 204
        assert client.get(f"/api/rooms/{room['code']}").json()["state"] == state


def test_put_state_statuses(client: TestClient, room: dict[str, Any]) -> None:
    code = room["code"]
    r = client.put(f"/api/rooms/{code}/state", json=STATE)
    assert r.status_code == 401
    r = put(client, room, STATE, key="x" * 32)
    assert r.status_code == 403 and detail(r)["msg"] == "that is not this room's presenter key"
    other = client.post("/api/rooms", headers=auth(TOKEN)).json()
    assert put(client, room, STATE, key=other["presenter_key"]).status_code == 403  # a key drives its own room
    r = client.put("/api/rooms/ZZZZZZ/state", json=STATE, headers=auth(room["presenter_key"]))
    assert r.status_code == 404 and detail(r)["loc"] == ["path", "code"]
    assert client.get("/api/rooms/ZZZZZZ").status_code == 404
    big = {**STATE, "sentence": "x" * limits.MAX_STATE_BYTES}
    r = put(client, room, big)
    assert r.status_code == 413 and "32,768 bytes" in detail(r)["msg"]
    r = put(client, room, {**STATE, "mask": "sideways"})
    assert r.status_code == 422 and detail(r)["loc"] == ["body", "mask"]
    r = put(client, room, {**STATE, "focus": "-1"})
    assert r.status_code == 422 and detail(r)["loc"] == ["body", "focus"]
    r = put(client, room, {**STATE, "sentence": "y" * 4001})
    assert r.status_code == 422 and detail(r)["loc"] == ["body", "sentence"]
    r = put(client, room, {**STATE, "token": TOKEN})  # a secret never travels to the followers
    assert r.status_code == 422 and "'token' is not part of a view" in detail(r)["msg"]
    r = put(client, room, {**STATE, "Bad-Name": "1"})
    assert r.status_code == 422
    r = put(client, room, {f"p{i}": "1" for i in range(limits.MAX_STATE_EXTRAS + 1)})
    assert r.status_code == 422 and f"at most {limits.MAX_STATE_EXTRAS}" in detail(r)["msg"]
    r = put(client, room, [1, 2])
    assert r.status_code == 422
    r = client.put(
        f"/api/rooms/{code}/state",
        content=b"{not json",
        headers={**auth(room["presenter_key"]), "content-type": "application/json"},
    )
    assert r.status_code == 422
    text = {**auth(room["presenter_key"]), "content-type": "text/plain"}
    r = client.put(f"/api/rooms/{code}/state", content=b"step=mix", headers=text)
    assert r.status_code == 415
    # nothing above changed the state
    assert client.get(f"/api/rooms/{code}").json()["state"] is None


def test_teacher_token_also_drives_a_room(client: TestClient, room: dict[str, Any]) -> None:
    assert put(client, room, STATE, key=TOKEN).status_code == 204


def test_state_changes_are_rate_limited(client: TestClient, room: dict[str, Any]) -> None:
    n = limits.MAX_PUTS_PER_SECOND + 5
    statuses = [put(client, room, {**STATE, "focus": str(i % 5)}).status_code for i in range(n)]
    assert statuses.count(204) >= limits.MAX_PUTS_PER_SECOND - 1
    assert 429 in statuses


def test_room_limit(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_ROOMS", 2)
    assert [client.post("/api/rooms", headers=auth(TOKEN)).status_code for _ in range(2)] == [201, 201]
    r = client.post("/api/rooms", headers=auth(TOKEN))
    assert r.status_code == 429 and "2 rooms are open" in detail(r)["msg"]


def test_close_a_room(client: TestClient, room: dict[str, Any]) -> None:
    code = room["code"]
    assert client.delete(f"/api/rooms/{code}").status_code == 401
    assert client.delete(f"/api/rooms/{code}", headers=auth("w" * 32)).status_code == 403
    with client.websocket_connect(f"/api/rooms/{code}/ws") as ws:
        ws.receive_json()
        assert client.delete(f"/api/rooms/{code}", headers=auth(room["presenter_key"])).status_code == 204
        assert ws.receive_json() == {"closed": "the presenter closed this room", "why": "closed"}
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == rooms.CLOSE_NO_ROOM
    assert client.get(f"/api/rooms/{code}").status_code == 404
    assert client.delete(f"/api/rooms/{code}", headers=auth(room["presenter_key"])).status_code == 404


# the join address and its QR code


def test_join_url_uses_the_host_the_teacher_used(client: TestClient) -> None:
    r = client.post("/api/rooms", headers={**auth(TOKEN), "host": "192.168.5.20:8000"})
    assert r.json()["join_url"] == f"http://192.168.5.20:8000/?room={r.json()['code']}"


def test_join_url_is_the_lan_address_when_serving_the_lan(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rooms, "lan_address", lambda: "10.20.30.40")
    r = client.post("/api/rooms", headers={**auth(TOKEN), "host": "127.0.0.1:8000"})
    assert r.json()["join_url"].startswith("http://127.0.0.1:8000/")  # bound to loopback: no one else can join
    monkeypatch.setenv(rooms.BIND_ENV, "0.0.0.0")
    r = client.post("/api/rooms", headers={**auth(TOKEN), "host": "localhost:8000"})
    assert r.json()["join_url"] == f"http://10.20.30.40:8000/?room={r.json()['code']}"
    monkeypatch.setenv(rooms.PUBLIC_ENV, "http://class.school.lan")
    r = client.post("/api/rooms", headers={**auth(TOKEN), "host": "localhost:8000"})
    assert r.json()["join_url"] == f"http://class.school.lan/?room={r.json()['code']}"


def test_qr_code_encodes_the_join_url(client: TestClient, room: dict[str, Any]) -> None:
    r = client.get(f"/api/rooms/{room['code']}/qr.svg")
    assert r.status_code == 200 and r.headers["content-type"] == "image/svg+xml"
    assert r.text.startswith("<svg") and "<script" not in r.text
    expected = io.BytesIO()
    segno.make(room["join_url"], error="m", micro=False).save(
        expected, kind="svg", scale=8, border=4, dark="#000", light="#fff", xmldecl=False, title="Join the class"
    )
    assert r.content == expected.getvalue()
    other = io.BytesIO()
    segno.make(room["join_url"] + "X", error="m").save(other, kind="svg", scale=8, border=4, xmldecl=False)
    assert r.content != other.getvalue()
    assert client.get("/api/rooms/ZZZZZZ/qr.svg").status_code == 404


# the WebSocket


def test_socket_gets_the_state_then_every_change_in_order(client: TestClient, room: dict[str, Any]) -> None:
    code = room["code"]
    assert put(client, room, STATE).status_code == 204
    with client.websocket_connect(f"/api/rooms/{code}/ws") as ws:
        hello = ws.receive_json()
        assert broker.seat_of(code, hello.pop("seat"))  # the follower's seat, signed by the server
        assert hello == {"state": STATE, "seq": 1, "followers": 1, "presenters": 0}
        for i in range(5):
            assert put(client, room, {**STATE, "focus": str(i)}).status_code == 204
        got: list[dict[str, Any]] = []
        while len(got) < 5:
            message = ws.receive_json()
            if "state" in message:
                got.append(message)
        assert [m["state"]["focus"] for m in got] == ["0", "1", "2", "3", "4"]
        assert [m["seq"] for m in got] == [2, 3, 4, 5, 6]
        assert client.get(f"/api/rooms/{code}").json()["followers"] == 1


def test_followers_count(client: TestClient, room: dict[str, Any]) -> None:
    code = room["code"]
    with client.websocket_connect(f"/api/rooms/{code}/ws") as a:
        assert a.receive_json()["followers"] == 1
        with client.websocket_connect(f"/api/rooms/{code}/ws") as b:
            assert b.receive_json()["followers"] == 2
            assert a.receive_json() == {"followers": 2}
            assert client.get(f"/api/rooms/{code}").json()["followers"] == 2
        assert a.receive_json() == {"followers": 1}


def test_a_follower_cannot_change_anything(client: TestClient, room: dict[str, Any]) -> None:
    code = room["code"]
    put(client, room, STATE)
    with client.websocket_connect(f"/api/rooms/{code}/ws") as ws:
        ws.receive_json()
        ws.send_json({"state": {**STATE, "step": "mix"}})
        error = ws.receive_json()
        assert error["error"]["type"] == "read_only"
        ws.send_text("not json")
        assert ws.receive_json()["error"]["type"] == "json"
        ws.send_json({"ping": 1})
        assert ws.receive_json() == {"pong": 1}
    assert client.get(f"/api/rooms/{code}").json()["state"] == STATE


def test_socket_message_limits(client: TestClient, room: dict[str, Any]) -> None:
    code = room["code"]
    with client.websocket_connect(f"/api/rooms/{code}/ws") as ws:
        ws.receive_json()
        ws.send_text("x" * (limits.MAX_SOCKET_MESSAGE_BYTES + 1))
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == rooms.CLOSE_TOO_BIG
    with client.websocket_connect(f"/api/rooms/{code}/ws") as ws:
        ws.receive_json()
        for _ in range(limits.SOCKET_BURST + 5):
            ws.send_json({"ping": 1})
        with pytest.raises(WebSocketDisconnect) as closed:
            while True:
                assert ws.receive_json() == {"pong": 1}
        assert closed.value.code == rooms.CLOSE_RATE


def test_socket_of_an_unknown_room(client: TestClient) -> None:
    with client.websocket_connect("/api/rooms/ZZZZZZ/ws") as ws:
        assert "there is no room ZZZZZZ" in ws.receive_json()["missing"]
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
        assert closed.value.code == rooms.CLOSE_NO_ROOM


def test_room_full(client: TestClient, room: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_FOLLOWERS", 1)
    with client.websocket_connect(f"/api/rooms/{room['code']}/ws") as first:
        first.receive_json()
        with client.websocket_connect(f"/api/rooms/{room['code']}/ws") as second:
            assert second.receive_json()["error"]["type"] == "room_full"
            with pytest.raises(WebSocketDisconnect) as closed:
                second.receive_json()
            assert closed.value.code == rooms.CLOSE_FULL


def presenter_socket(client: TestClient, room: dict[str, Any], key: str | None = None) -> Any:
    protocols = [rooms.PRESENTER_PROTOCOL, rooms.KEY_PROTOCOL + (key or room["presenter_key"])]
    return client.websocket_connect(f"/api/rooms/{room['code']}/ws", subprotocols=protocols)


def test_presenter_socket_is_not_a_follower(client: TestClient, room: dict[str, Any]) -> None:
    with presenter_socket(client, room) as ws:
        assert ws.accepted_subprotocol == rooms.PRESENTER_PROTOCOL
        assert ws.receive_json()["followers"] == 0
    with presenter_socket(client, room, key="w" * 32) as ws:  # a wrong key: an ordinary follower
        assert ws.accepted_subprotocol is None
        assert ws.receive_json()["followers"] == 1


def test_followers_know_whether_a_teachers_page_drives_the_room(client: TestClient, room: dict[str, Any]) -> None:
    """A presenter socket counts once its page says the room shows its view ({"driving": true}): until
    then (a page just back after a restart) its followers must not say "live"."""
    code = room["code"]
    with client.websocket_connect(f"/api/rooms/{code}/ws") as follower:
        assert follower.receive_json()["presenters"] == 0
        with presenter_socket(client, room) as teacher:
            assert teacher.receive_json()["presenters"] == 0
            assert client.get(f"/api/rooms/{code}").json()["presenters"] == 0  # connected, not driving yet
            teacher.send_json({"driving": True})
            assert next_with(follower, "presenters") == {"presenters": 1}
            assert client.get(f"/api/rooms/{code}").json()["presenters"] == 1
            follower.send_json({"driving": True})  # a follower cannot pretend to drive
            assert next_with(follower, "error")["error"]["type"] == "read_only"
            assert client.get(f"/api/rooms/{code}").json()["presenters"] == 1
        assert next_with(follower, "presenters") == {"presenters": 0}  # the teacher's page went away
    with client.websocket_connect(f"/api/rooms/{code}/ws") as follower:
        assert follower.receive_json()["presenters"] == 0


def test_reopen_a_room_with_its_code_and_key(client: TestClient, room: dict[str, Any]) -> None:
    """PUT /api/rooms/{code}: a presenter's page opens its lost room again (here: closed on the server)."""
    code, key = room["code"], room["presenter_key"]
    teacher = auth(TOKEN)
    assert client.put(f"/api/rooms/{code}", json={"presenter_key": key}, headers=teacher).status_code == 204
    assert client.delete(f"/api/rooms/{code}", headers=auth(key)).status_code == 204
    assert client.get(f"/api/rooms/{code}").status_code == 404
    r = client.put(f"/api/rooms/{code.lower()}", json={"presenter_key": key}, headers=teacher)
    assert r.status_code == 201 and r.json() == {"code": code, "join_url": f"http://testserver/?room={code}"}
    assert client.get(f"/api/rooms/{code}").json() == {"state": None, "followers": 0, "presenters": 0}
    assert put(client, room, STATE).status_code == 204  # the same key drives it
    other = client.put(f"/api/rooms/{code}", json={"presenter_key": "k" * 32}, headers=teacher)
    assert other.status_code == 409 and detail(other)["type"] == "room_taken"
    assert client.put(f"/api/rooms/{code}", json={"presenter_key": key}, headers=auth(key)).status_code == 403
    assert client.put(f"/api/rooms/{code}", json={"presenter_key": key}).status_code == 401
    assert client.put(f"/api/rooms/{code}", json={"presenter_key": "short"}, headers=teacher).status_code == 422
    bad = client.put("/api/rooms/AB0OIL", json={"presenter_key": key}, headers=teacher)  # never a code
    assert bad.status_code == 422 and detail(bad)["loc"] == ["path", "code"]


def next_with(ws: Any, field: str) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = ws.receive_json()
        if field in message:
            return message


# resetting a room (the quiz's part: tests/classroom/test_quiz.py)


def test_reset_a_room(client: TestClient, room: dict[str, Any]) -> None:
    code, key = room["code"], room["presenter_key"]
    assert put(client, room, STATE).status_code == 204
    assert client.post(f"/api/rooms/{code}/reset").status_code == 401
    assert client.post(f"/api/rooms/{code}/reset", headers=auth("w" * 32)).status_code == 403
    assert client.post("/api/rooms/NOROOM/reset", headers=auth(key)).status_code == 404
    r = client.post(f"/api/rooms/{code}/quiz", json={"question": "steps.share"}, headers=auth(key))
    assert r.status_code == 201, r.text
    with client.websocket_connect(f"/api/rooms/{code}/ws") as a:
        assert "quiz" in a.receive_json()
        assert client.post(f"/api/rooms/{code}/reset", headers=auth(key)).status_code == 204
        while "quiz" not in (message := a.receive_json()):
            pass
        assert message == {"quiz": None}
    info = client.get(f"/api/rooms/{code}").json()
    assert info["state"] == STATE  # the view stays: the class goes on from where it is
    with client.websocket_connect(f"/api/rooms/{code}/ws") as late:
        assert "quiz" not in late.receive_json()


def test_the_projector_screen_rides_in_the_state(client: TestClient, room: dict[str, Any]) -> None:
    code = room["code"]
    for screen in ("blank", "hidden"):
        assert put(client, room, {**STATE, "screen": screen}).status_code == 204
        assert client.get(f"/api/rooms/{code}").json()["state"]["screen"] == screen
        with client.websocket_connect(f"/api/rooms/{code}/ws") as late:  # a late joiner blanks too
            assert late.receive_json()["state"]["screen"] == screen
    r = put(client, room, {**STATE, "screen": "dark"})
    assert r.status_code == 422 and detail(r)["loc"][-1] == "screen"


def test_openapi_lists_the_classroom(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/api/rooms", "/api/rooms/{code}", "/api/rooms/{code}/state", "/api/lessons/{lesson_id}"):
        assert path in paths
    assert "413" in paths["/api/rooms/{code}/state"]["put"]["responses"]
    lesson_body = paths["/api/lessons"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "$ref" not in json.dumps(lesson_body) and "focus" in json.dumps(lesson_body)
