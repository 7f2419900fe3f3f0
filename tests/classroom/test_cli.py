"""`attention3d`: the teacher link at start (in a 0600 file when the output is no terminal), the token's rules,
and a token that never reaches the log."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from app.classroom import limits
from app.classroom.broker import Subscriber
from tests.classroom.conftest import ROOT
from tests.servers import free_port, stop


def test_teacher_link_is_printed_and_the_token_never_logged(tmp_path: Path) -> None:
    port = free_port()
    token = "a-teacher-token-of-my-own-42"
    env = {**os.environ, "ATTENTION_BACKEND": "numpy"}
    env.pop("ATTENTION_TEACHER_TOKEN", None)
    (tmp_path / "token").write_text(token)
    data = tmp_path / "data"
    cmd = [sys.executable, "-m", "app", "--port", str(port), "--teacher-token-file", str(tmp_path / "token")]
    # the output goes to files, never pipes nobody reads: a full pipe would stall the server
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        proc = subprocess.Popen([*cmd, "--data-dir", str(data)], cwd=ROOT, env=env, stdout=out, stderr=err)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/?token={token}", timeout=5) as r:
                    assert r.status == 200
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        for query in (f"?%74oken={token}", f"?x=1&TOKEN={token}"):  # spelled otherwise: hidden too
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/{query}", timeout=5) as r:
                assert r.status == 200
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/rooms", method="POST", headers={"authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=5) as r:
            assert r.status == 201
    finally:
        stop(proc, 15)
    stdout, stderr = (tmp_path / "out").read_text(), (tmp_path / "err").read_text()
    # the output is a file, not a terminal: the link is in a file only this user reads, the output says where
    link = data / "teacher-link.txt"
    assert f"Teacher link written to {link} (readable by this user only" in stdout
    assert link.read_text() == f"http://127.0.0.1:{port}/?token={token}\n" and link.stat().st_mode & 0o777 == 0o600
    both = stdout + stderr
    assert both.count(token) == 0  # uvicorn's access log shows the request as /?token=[hidden]
    assert '"GET /?token=[hidden] HTTP/1.1" 200' in both
    assert '"GET /?%74oken=[hidden] HTTP/1.1" 200' in both and "TOKEN=[hidden]" in both
    assert (data / "classroom.sqlite3").exists()  # --data-dir


def test_a_short_or_odd_token_is_refused() -> None:
    for bad in ("short", "has spaces in it, quite long"):
        cmd = [sys.executable, "-m", "app", "--port", str(free_port()), "--teacher-token", bad]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2
        assert "--teacher-token" in done.stderr


def test_a_generated_token_is_long() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ATTENTION_TEACHER_TOKEN"}
    code = "from app.classroom import auth; t = auth.teacher_token(); print(len(t), auth.teacher_token() == t)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["32", "True"]  # 192 bits, the same for the whole process


def test_a_slow_follower_is_dropped_not_waited_for() -> None:
    async def fill() -> Subscriber:
        sub = Subscriber(presenter=False)
        for i in range(limits.FOLLOWER_QUEUE + 1):
            sub.put(str(i))
        return sub

    # on a thread of its own: the browser tests' Playwright keeps the main thread's event loop running
    with ThreadPoolExecutor(1) as pool:
        sub = pool.submit(asyncio.run, fill()).result()
    assert sub.overflow and sub.queue.qsize() == limits.FOLLOWER_QUEUE
