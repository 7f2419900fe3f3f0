"""A school server whose parts misbehave (docs/school-server.md, "When a part fails"): real app processes,
a real PostgreSQL frozen with SIGSTOP, a data folder on a full or read-only disk. Each fault gets a clear
answer within seconds, nothing is half-written, and the rest of the app goes on serving.

The only timings asserted are the faults' deadlines (a 503 within 3 s), never how fast a normal path is.
"""

from __future__ import annotations

import http.client
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from app.classroom import database
from tests.classroom.conftest import TOKEN, app_process
from tests.classroom.test_processes import until
from tests.postgres import PostgresServer

LESSON = {"title": "Frozen", "views": [{"state": {"step": "score"}, "note": "one"}]}


def http_call(
    base: str, method: str, path: str, body: Any = None, secret: str | None = TOKEN, source: str = "127.0.0.1"
) -> tuple[int, dict[str, str], Any, float]:
    """(status, headers, JSON or None, seconds) of one request on a connection of its own from `source`."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30, source_address=(source, 0))
    headers = {"content-type": "application/json", **({"authorization": f"Bearer {secret}"} if secret else {})}
    started = time.monotonic()
    try:
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        r = conn.getresponse()
        raw = r.read()
        seconds = time.monotonic() - started
        answer = json.loads(raw) if raw and r.getheader("content-type", "").startswith("application/json") else None
        return r.status, {k.lower(): v for k, v in r.getheaders()}, answer, seconds
    finally:
        conn.close()


def test_a_frozen_postgresql(tmp_path: Path, postgres: PostgresServer) -> None:
    """PostgreSQL frozen (SIGSTOP on the postmaster and its children): 45 lesson calls at once each get a
    503 with Retry-After within 3 s, none of their writes is kept, and meanwhile the page, a static
    file, the QR code and the rooms answer as usual. After SIGCONT the lessons come back by themselves."""
    url = postgres.new_database()
    with app_process(tmp_path, None, **{database.URL_ENV: url}) as (base, _):
        assert http_call(base, "GET", "/api/lessons")[0] == 200  # the pool holds a connection now
        status, _, room, _ = http_call(base, "POST", "/api/rooms")
        assert status == 201
        code = room["code"]
        others = ["/", "/static/js/state.js", f"/api/rooms/{code}", f"/api/rooms/{code}/qr.svg"]
        for path in others:  # once before, so that nothing below is a first load
            assert http_call(base, "GET", path)[0] == 200
        postgres.freeze()
        try:
            calls = [("GET", "/api/lessons", None)] * 15 + [("GET", "/api/lessons/1", None)] * 15
            calls += [("POST", "/api/lessons", {**LESSON, "title": f"frozen {i}"}) for i in range(15)]
            with ThreadPoolExecutor(len(calls)) as pool:
                futures = [
                    pool.submit(http_call, base, method, path, body, TOKEN, f"127.0.1.{i % 8 + 1}")
                    for i, (method, path, body) in enumerate(calls)
                ]
                time.sleep(0.3)  # the lesson calls are queued (and hold what they hold) while these run
                meanwhile = {path: http_call(base, "GET", path, source="127.0.2.1") for path in others}
                answers = [f.result() for f in futures]
        finally:
            postgres.thaw()
        for path, (status, _, _, seconds) in meanwhile.items():
            assert status == 200, path
            assert seconds <= 1.5, f"{path} took {seconds:.2f} s while the database was frozen"
        for status, headers, answer, seconds in answers:
            assert status == 503, answer
            assert seconds <= 3.0, f"a lesson call took {seconds:.2f} s to answer"
            assert headers["retry-after"] == str(database.RETRY_SECONDS)
            assert answer["detail"][0]["loc"] == ["server", "database"]
        deadline = time.monotonic() + 15  # back by themselves: the next call after Retry-After finds it
        while (listed := http_call(base, "GET", "/api/lessons"))[0] != 200:
            assert time.monotonic() < deadline, listed
            time.sleep(0.5)
        assert not [row for row in listed[2] if row["title"].startswith("frozen")]  # 503: nothing was kept
        status, _, created, _ = http_call(base, "POST", "/api/lessons", LESSON)
        assert status == 201 and http_call(base, "GET", f"/api/lessons/{created['id']}")[2]["title"] == "Frozen"


@pytest.mark.parametrize("rooms_in", ["memory", "redis"])
def test_a_vote_is_a_word_index_in_both_brokers(tmp_path: Path, rooms_in: str, request: pytest.FixtureRequest) -> None:
    """`"choice": true` counted as a vote for word 1 in memory rooms and crashed the socket with a traceback
    in Redis rooms: now it, and every other choice that is no whole number, is refused on the socket,
    which stays open, and the follower's real vote counts."""
    env = {"ATTENTION_REDIS_URL": request.getfixturevalue("redis_url")} if rooms_in == "redis" else {}
    with app_process(tmp_path, None, **env) as (base, proc):
        status, _, room, _ = http_call(base, "POST", "/api/rooms")
        code, key = room["code"], room["presenter_key"]
        with connect(base.replace("http", "ws") + f"/api/rooms/{code}/ws") as ws:
            ws.recv(timeout=5)
            ask = {"tokens": ["the", "cat", "ate"], "focus": 2}
            status, _, quiz, _ = http_call(base, "POST", f"/api/rooms/{code}/quiz", ask, secret=key)
            assert status == 201
            for choice in (True, False, 1.0, "1", None, [1]):
                ws.send(json.dumps({"vote": {"quiz": quiz["id"], "choice": choice}}))
                assert until(ws, "error")["error"]["type"] == "vote", choice
            ws.send(json.dumps({"vote": {"quiz": quiz["id"], "choice": 1}}))
            assert until(ws, "voted")["voted"]["choice"] == 1
            status, _, revealed, _ = http_call(
                base, "POST", f"/api/rooms/{code}/quiz/reveal", {"answer": 1}, secret=key
            )
            assert revealed["counts"] == [0, 1, 0]  # the one real vote, nothing from the refused ones
        assert proc.poll() is None
