"""A school's server past one process (docs/school-server.md): real app processes, a real PostgreSQL and a
real redis-server. Two processes with different data folders are one service; kill -9 of one loses nothing;
a PostgreSQL that goes away answers 503 on the lesson routes while rooms go on, and comes back; the CLI
refuses an unreachable database and --workers without Redis with one line and exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from app.classroom import database
from tests.classroom.conftest import ROOT, TOKEN, app_process, auth, free_port, wait_for
from tests.classroom.test_processes import STATE, until
from tests.postgres import PostgresServer
from tests.servers import stop

LESSON = {"title": "Shared", "views": [{"state": {"step": "score"}, "note": "one"}]}


def call(
    method: str, url: str, body: Any = None, secret: str | None = TOKEN, if_match: str | None = None
) -> tuple[int, Any]:
    """(status, JSON body) of one request; an error status is returned, not raised."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json", **(auth(secret) if secret else {})}
    if if_match is not None:
        headers["if-match"] = if_match
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers)) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_two_processes_are_one_service(tmp_path: Path, postgres: PostgresServer, redis_url: str) -> None:
    env = {database.URL_ENV: postgres.new_database(), "ATTENTION_REDIS_URL": redis_url}
    with app_process(tmp_path / "a", None, **env) as (a, proc_a), app_process(tmp_path / "b", None, **env) as (b, _):
        # a lesson saved through A is listed, read, edited and deleted through B
        status, created = call("POST", a + "/api/lessons", LESSON)
        assert status == 201
        lesson = f"/api/lessons/{created['id']}"
        assert [row["title"] for row in call("GET", b + "/api/lessons")[1]][-1] == "Shared"
        assert call("GET", b + lesson)[1]["views"] == LESSON["views"]
        assert call("PUT", b + lesson, {**LESSON, "title": "Edited on B"}, if_match='"1"')[0] == 204
        assert call("PUT", a + lesson, {**LESSON, "title": "A's stale edit"}, if_match='"1"')[0] == 412
        assert call("GET", a + lesson)[1]["title"] == "Edited on B"
        # a room opened on A is driven through B and followed on A
        _, room = call("POST", a + "/api/rooms")
        code, key = room["code"], room["presenter_key"]
        with connect(a.replace("http", "ws") + f"/api/rooms/{code}/ws") as follower:
            assert json.loads(follower.recv(timeout=5))["state"] is None
            assert call("PUT", f"{b}/api/rooms/{code}/state", STATE, key)[0] == 204
            assert until(follower, "state")["state"] == STATE
        # kill -9 of A loses nothing: B has the edited lesson and the room's state
        os.kill(proc_a.pid, signal.SIGKILL)
        proc_a.wait()
        assert call("GET", b + lesson)[1]["title"] == "Edited on B"
        assert call("GET", f"{b}/api/rooms/{code}", secret=None)[1]["state"] == STATE
        assert call("DELETE", b + lesson)[0] == 204


def test_postgresql_lost_then_back(tmp_path: Path, postgres: PostgresServer) -> None:
    """Lessons answer 503 with a clear message while PostgreSQL is stopped; rooms keep working; lessons come back."""
    with app_process(tmp_path, None, **{database.URL_ENV: postgres.new_database()}) as (base, _):
        assert call("GET", base + "/api/lessons")[0] == 200
        postgres.stop()
        try:
            for method, path, body in (("GET", "/api/lessons", None), ("POST", "/api/lessons", LESSON)):
                status, answer = call(method, base + path, body)
                assert status == 503, (method, path, answer)
                assert answer["detail"][0]["msg"].startswith("the lesson database can't be reached right now")
                assert "rooms keep working" in answer["detail"][0]["msg"]
            status, room = call("POST", base + "/api/rooms")  # rooms live elsewhere: they keep working
            assert status == 201
            assert call("PUT", f"{base}/api/rooms/{room['code']}/state", STATE, room["presenter_key"])[0] == 204
            assert call("GET", f"{base}/api/rooms/{room['code']}", secret=None)[1]["state"] == STATE
        finally:
            postgres.start()
        assert call("POST", base + "/api/lessons", LESSON)[0] == 201
        assert [row["title"] for row in call("GET", base + "/api/lessons")[1]][-1] == "Shared"
        postgres.stop()  # a restart between two requests: the first one after it finds the new server
        postgres.start()
        assert call("GET", base + "/api/lessons")[0] == 200


def attention3d(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items() if key != database.URL_ENV}
    environ.update({"ATTENTION_TEACHER_TOKEN": TOKEN, **(env or {})})
    cmd = [sys.executable, "-m", "app", "--port", str(free_port()), *args]
    return subprocess.run(cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60)


def test_the_cli_refuses_what_it_can_not_serve(tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path)]
    gone = attention3d(*data, "--database", f"postgresql://teacher:secret@127.0.0.1:{free_port()}/lessons")
    assert gone.returncode == 2 and gone.stdout == ""
    line = gone.stderr.strip()
    assert "\n" not in line and line.startswith("attention3d: --database: PostgreSQL at postgresql://teacher:***@")
    assert "secret" not in line
    other = attention3d(*data, "--database", "mysql://x@y/z")
    assert other.returncode == 2 and "sqlite:///FILE or postgresql://" in other.stderr
    workers = attention3d(*data, "--workers", "2")
    assert workers.returncode == 2 and "--workers 2 needs --redis" in workers.stderr


def test_workers_share_lessons_and_rooms(tmp_path: Path, redis_url: str) -> None:
    """attention3d --workers 2 --redis: lessons (one SQLite file, WAL) and rooms (Redis) are the same on each."""
    port = free_port()
    environ = {**os.environ, "ATTENTION_TEACHER_TOKEN": TOKEN, "ATTENTION_BACKEND": "numpy"}
    environ.pop(database.URL_ENV, None)
    cmd = [sys.executable, "-m", "app", "--port", str(port), "--workers", "2", "--redis", redis_url]
    proc = subprocess.Popen([*cmd, "--data-dir", str(tmp_path)], cwd=ROOT, env=environ, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(base + "/api/examples", proc)
        ids = [call("POST", base + "/api/lessons", {**LESSON, "title": f"L{i}"})[1]["id"] for i in range(6)]
        for _ in range(6):  # whichever worker answers has every lesson
            assert [row["id"] for row in call("GET", base + "/api/lessons")[1]][-6:] == ids
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        assert len(children) >= 2  # the workers (and multiprocessing's helper, if any)
        _, room = call("POST", base + "/api/rooms")
        with ExitStack() as stack:
            url = base.replace("http", "ws") + f"/api/rooms/{room['code']}/ws"
            sockets = [stack.enter_context(connect(url)) for _ in range(4)]
            for ws in sockets:
                ws.recv(timeout=5)
            assert call("PUT", f"{base}/api/rooms/{room['code']}/state", STATE, room["presenter_key"])[0] == 204
            for ws in sockets:
                assert until(ws, "state")["state"] == STATE
    finally:
        stop(proc, 15)
