"""An app with a known teacher token and its own data directory, and real server processes."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.postgres import PostgresServer
from tests.servers import answers, free_port, stop

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "teacher-token-for-tests-0123456789"


def auth(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("ATTENTION_TEACHER_TOKEN", TOKEN)
    monkeypatch.setenv("ATTENTION_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("ATTENTION_REDIS_URL", raising=False)
    monkeypatch.delenv("ATTENTION_BIND_HOST", raising=False)
    monkeypatch.delenv("ATTENTION_PUBLIC_URL", raising=False)
    with TestClient(create_app(backend="numpy")) as c:
        yield c


@pytest.fixture
def room(client: TestClient) -> dict[str, Any]:
    r = client.post("/api/rooms", headers=auth(TOKEN))
    assert r.status_code == 201, r.text
    created: dict[str, Any] = r.json()
    return created


def wait_for(url: str, proc: subprocess.Popen[bytes], seconds: float = 30) -> None:
    if not answers(url, proc, seconds):
        raise RuntimeError(f"{url} did not answer")


@contextmanager
def app_process(data_dir: Path, port: int | None = None, **env: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`uvicorn app.main:app` on a free port (or `port`), the test token, the data directory; (base URL, process)."""
    port = port or free_port()
    environ = {**os.environ, "ATTENTION_BACKEND": "numpy", "ATTENTION_TEACHER_TOKEN": TOKEN}
    environ.update({"ATTENTION_DATA_DIR": str(data_dir), **env})
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--log-level", "warning"], cwd=ROOT, env=environ)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(base + "/api/examples", proc)  # lessons need the teacher token
        yield base, proc
    finally:
        if proc.poll() is None:
            stop(proc, 10)


def start_redis(port: int, *options: str) -> subprocess.Popen[bytes]:
    """A real redis-server (Debian's) on `port`, with nothing saved to disk unless `options` say so;
    returns once it answers PING (skips the test without redis-server)."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("no redis-server (make test installs it: apt-get install redis-server)")
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *options]
    proc = subprocess.Popen([exe, *args], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("redis-server did not start")
        time.sleep(0.05)


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A real redis-server (Debian's) on a free port, with nothing saved to disk."""
    port = free_port()
    proc = start_redis(port)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session (initdb into a temporary folder, pg_ctl on a free port)."""
    try:
        server = PostgresServer()
    except FileNotFoundError as e:
        if os.environ.get("CI"):
            raise  # make test installs it: a missing server must not pass as a skip
        pytest.skip(str(e))
    yield server
    server.close()
