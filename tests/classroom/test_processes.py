"""Real server processes: a room survives a restart; with Redis, two processes serve one room."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from tests.classroom.conftest import TOKEN, app_process, auth

STATE = {"chapter": "steps", "example": "the-cat-ate-its-fish", "step": "mix", "mask": "causal", "focus": "1"}


def call(method: str, url: str, body: Any = None, secret: str | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json", **(auth(secret) if secret else {})}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers)) as r:
        raw = r.read()
        return r.status, json.loads(raw) if raw else None


def until(ws: Any, field: str, timeout: float = 5) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        message: dict[str, Any] = json.loads(ws.recv(timeout=max(0.01, deadline - time.monotonic())))
        if field in message:
            return message


def test_a_room_survives_a_restart(tmp_path: Path) -> None:
    with app_process(tmp_path) as (base, _):
        _, room = call("POST", base + "/api/rooms", secret=TOKEN)
        assert call("PUT", f"{base}/api/rooms/{room['code']}/state", STATE, room["presenter_key"])[0] == 204
    with app_process(tmp_path) as (base, _):
        kept = {"state": STATE, "followers": 0, "presenters": 0}
        assert call("GET", f"{base}/api/rooms/{room['code']}") == (200, kept)
        ws_url = base.replace("http", "ws") + f"/api/rooms/{room['code']}/ws"
        with connect(ws_url) as ws:
            assert json.loads(ws.recv(timeout=5))["seq"] == 1
            moved = {**STATE, "step": "softmax"}
            assert call("PUT", f"{base}/api/rooms/{room['code']}/state", moved, room["presenter_key"])[0] == 204
            assert until(ws, "state") == {"state": moved, "seq": 2}


def test_two_processes_share_rooms_through_redis(tmp_path: Path, redis_url: str) -> None:
    with (
        # the followers all come from 127.0.0.1: their votes count per seat (the address rule: tests/test_lan.py)
        app_process(tmp_path / "a", ATTENTION_REDIS_URL=redis_url, ATTENTION_VOTES_PER_ADDRESS="0") as (a, _),
        app_process(tmp_path / "b", ATTENTION_REDIS_URL=redis_url, ATTENTION_VOTES_PER_ADDRESS="0") as (b, _),
    ):
        _, room = call("POST", a + "/api/rooms", secret=TOKEN)  # opened on process A
        code, key = room["code"], room["presenter_key"]
        ws_b = b.replace("http", "ws") + f"/api/rooms/{code}/ws"
        ws_a = a.replace("http", "ws") + f"/api/rooms/{code}/ws"
        with connect(ws_b) as f1, connect(ws_b) as f2, connect(ws_a) as f3:
            assert json.loads(f1.recv(timeout=5))["state"] is None
            f2.recv(timeout=5)
            f3.recv(timeout=5)
            while until(f3, "followers")["followers"] != 3:  # joins are announced in bursts
                pass
            assert call("GET", f"{a}/api/rooms/{code}")[1]["followers"] == 3  # counted across processes
            for i in range(10):  # the presenter drives process A; followers on B see every change in order
                assert call("PUT", f"{a}/api/rooms/{code}/state", {**STATE, "focus": str(i)}, key)[0] == 204
            for ws in (f1, f2, f3):
                seen = [until(ws, "state")["state"]["focus"] for _ in range(10)]
                assert seen == [str(i) for i in range(10)]
            assert call("GET", f"{b}/api/rooms/{code}")[1]["state"]["focus"] == "9"
            # the quiz: asked on A, voted on B, counted once per follower, revealed on B with A's answer
            asked_at = {**STATE, "step": "softmax", "focus": "3"}
            assert call("PUT", f"{a}/api/rooms/{code}/state", asked_at, key)[0] == 204
            _, quiz = call("POST", f"{a}/api/rooms/{code}/quiz", {"question": "steps.share"}, key)
            for ws, choice in ((f1, 0), (f2, 3), (f3, 3)):
                until(ws, "quiz")
                ws.send(json.dumps({"vote": {"quiz": quiz["id"], "choice": choice}}))
                assert until(ws, "voted")["voted"]["choice"] == choice
            f1.send(json.dumps({"vote": {"quiz": quiz["id"], "choice": 3}}))
            assert until(f1, "error")["error"]["type"] == "voted"
            _, revealed = call("POST", f"{b}/api/rooms/{code}/quiz/reveal", None, key)
            assert revealed["counts"] == [1, 0, 0, 2]
            assert until(f3, "quiz")["quiz"]["answer"]["right"] == [3]
            # closing on B closes the followers on A
            assert call("DELETE", f"{b}/api/rooms/{code}", secret=key)[0] == 204
            assert "closed" in until(f3, "closed")
        try:
            call("GET", f"{a}/api/rooms/{code}")
            raise AssertionError("the room should be gone")
        except urllib.error.HTTPError as e:
            assert e.code == 404
