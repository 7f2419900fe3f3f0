"""A school's server past one process (docs/school-server.md): real app processes, a real PostgreSQL and a
real redis-server. Two processes with different data folders are one service; kill -9 of one loses nothing;
a PostgreSQL that goes away answers 503 on the lesson routes while rooms go on, and comes back; the CLI
refuses an unreachable database and --workers without Redis with one line and exit 2."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from app.classroom import database
from tests.classroom.conftest import ROOT, TOKEN, app_process, auth, wait_for
from tests.classroom.test_processes import STATE, until
from tests.postgres import PostgresServer
from tests.servers import free_port, stop

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


# the per-address limits with several workers


def redis_server(port: int) -> subprocess.Popen[bytes]:
    """A redis-server of the test's own (it is stopped on purpose below), nothing saved to disk."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("no redis-server (make test installs it: apt-get install redis-server)")
    cmd = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        with suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            if s.recv(16).startswith(b"+PONG"):
                return proc
        assert time.monotonic() < deadline, "redis-server did not start"
        time.sleep(0.05)


def get(port: int, source: str, keep: list[socket.socket] | None = None) -> int | None:
    """GET /api/examples on a new connection from `source`: its status, or None when the server closed the
    connection unanswered (refused). The socket is kept open in `keep`, else closed."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    try:
        s.sendall(b"GET /api/examples HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        head = b""
        while b"\r\n" not in head and (more := s.recv(4096)):
            head += more
    except OSError:
        head = b""
    if keep is None:
        s.close()
    else:
        keep.append(s)
    return int(head.split()[1]) if head.startswith(b"HTTP/1.1 ") else None


def workers_of(proc: subprocess.Popen[bytes], port: int) -> list[int]:
    """The worker processes of `attention3d --workers N`: its children that hold the listening socket."""
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                listening.add(f"socket:[{fields[9]}]")
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    workers = []
    for pid in map(int, children):
        links = set()
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with suppress(OSError):
                links.add(os.readlink(fd))
        if links & listening:
            workers.append(pid)
    return workers


@contextmanager
def only(serving: int, workers: list[int]) -> Iterator[None]:
    """Every worker but `serving` stopped (SIGSTOP): the next connections are accepted by `serving`."""
    others = [pid for pid in workers if pid != serving]
    for pid in others:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in others:
            os.kill(pid, signal.SIGCONT)


def test_workers_share_the_caps_per_address(tmp_path: Path) -> None:
    """attention3d --workers 2 --redis: one address gets the caps once, not once per worker (it got 2x).
    Which worker accepts a connection is steered by stopping the other one for a moment. 4 connections
    open at once: 3 on worker A, then 1 more of 3 tried on worker B; a burst of 8 requests at 2 a second:
    8 on A, then B serves only what the rate has added since. With Redis stopped each worker counts its own
    half (one log line says so) and serves on."""
    redis_port, port = free_port(), free_port()
    redis = redis_server(redis_port)
    environ = {**os.environ, "ATTENTION_TEACHER_TOKEN": TOKEN, "ATTENTION_BACKEND": "numpy"}
    environ.pop(database.URL_ENV, None)
    environ.update(ATTENTION_CONNECTIONS_PER_ADDRESS="4", ATTENTION_REQUEST_RATE="2", ATTENTION_CONNECTION_RATE="50")
    url = f"redis://127.0.0.1:{redis_port}/0"
    cmd = [sys.executable, "-m", "app", "--port", str(port), "--workers", "2", "--redis", url]
    log = tmp_path / "log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([*cmd, "--data-dir", str(tmp_path)], cwd=ROOT, env=environ, stdout=out, stderr=out)
    try:
        wait_for(f"http://127.0.0.1:{port}/api/examples", proc)
        a, b = workers_of(proc, port)
        # open connections: 3 on A, then B serves 1 of 3 more (4 at once in all), closing the others unanswered
        kept: list[socket.socket] = []
        with only(a, [a, b]):
            assert [get(port, "127.0.6.1", kept) for _ in range(3)] == [200] * 3
        with only(b, [a, b]):
            assert [get(port, "127.0.6.1", kept) for _ in range(3)] == [200, None, None]
        for s in kept:
            s.close()
        # requests, each on a new connection: a burst of 8 on A; then on B only what 2 a second added since
        started = time.monotonic()
        with only(a, [a, b]):
            assert [get(port, "127.0.6.2") for _ in range(8)] == [200] * 8
        with only(b, [a, b]):
            statuses = [get(port, "127.0.6.2") for _ in range(8)]
        elapsed = time.monotonic() - started
        assert statuses.count(200) <= 2 * elapsed + 1 and statuses.count(429) == 8 - statuses.count(200), statuses
        assert statuses[-1] == 429
        # Redis stopped: each worker counts its own half of the caps (2 connections), and serves on
        redis.terminate()
        redis.wait(timeout=10)
        kept = []
        with only(a, [a, b]):
            assert [get(port, "127.0.6.3", kept) for _ in range(3)] == [200, 200, None]
        for s in kept:
            s.close()
        assert get(port, "127.0.6.4") == 200
    finally:
        stop(proc, 15)
        if redis.poll() is None:
            redis.terminate()
    text = log.read_text()
    assert "Traceback" not in text
    assert 1 <= text.count("per-address limits: Redis can't be reached") <= 2, text  # one line per worker
