"""A curious student's laptop on the school LAN, against `attention3d` and, for reference in the
same run, plain `uvicorn app.main:app` (uvicorn's defaults, as the server ran before issue 19).

    .venv/bin/python -m bench.lan                    both servers
    options: --followers 40 --frame-mb 8 --half-sent 2000 --watch 25

Big frames: `followers` WebSocket followers of one room (8 per loopback address) each send one
`frame-mb` MB frame; reported: how much the server grew (peak RSS − RSS before, from /proc) and
the close codes. Half-sent requests: `half-sent` connections from 127.0.0.1 each send part of a
request's headers and then nothing; reported: how long a whole request from 127.0.0.2 waits, and
the share of the half-sent connections the server has closed after 5, 10 and `watch` seconds.
Goals (issue 19): growth ≤ 100 MB; the other address answered in ≤ 1 s; ≥ 90 % closed in 25 s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import resource
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-teacher-token-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def server(kind: str, data: Path) -> Iterator[tuple[int, int]]:
    """(port, pid) of `attention3d` ("guarded") or plain uvicorn ("plain")."""
    port = free_port()
    env = {**os.environ, "ATTENTION_BACKEND": "numpy", "ATTENTION_TEACHER_TOKEN": TOKEN}
    env["ATTENTION_DATA_DIR"] = str(data / kind)
    if kind == "guarded":
        cmd = [sys.executable, "-m", "app", "--port", str(port)]
    else:
        cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--port", str(port), "--ws-per-message-deflate", "0"]
    with open(data / f"{kind}.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{kind} server did not start") from None
                time.sleep(0.1)
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


def request(port: int, method: str, path: str, source: str = "127.0.0.1") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        conn.request(method, path)
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def rss_mb(pid: int, field: str) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(rf"^{field}:\s+(\d+) kB", status, re.M)
    return int(found.group(1)) / 1024 if found else float("nan")


def big_frame(port: int, code: str, source: str, size: int) -> int | None:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    with connect(f"ws://127.0.0.1:{port}/api/rooms/{code}/ws", sock=sock, open_timeout=10) as ws:
        ws.recv(timeout=10)
        try:
            ws.send(b"x" * size)
            ws.recv(timeout=10)
        except (ConnectionClosed, OSError, TimeoutError):
            pass
        return ws.close_code


def frames(port: int, pid: int, followers: int, frame_mb: int) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/api/rooms", headers={"authorization": f"Bearer {TOKEN}"})
    code = json.loads(conn.getresponse().read())["code"]
    conn.close()
    before = rss_mb(pid, "VmRSS")
    sources = [f"127.0.0.{1 + i // 8}" for i in range(followers)]
    started = time.monotonic()
    with ThreadPoolExecutor(followers) as pool:
        codes = list(pool.map(lambda s: big_frame(port, code, s, frame_mb * 2**20), sources))
    seconds = time.monotonic() - started
    grown = rss_mb(pid, "VmHWM") - before
    counted = {str(c): codes.count(c) for c in sorted(set(codes), key=str)}
    peak = before + grown
    return f"grew {grown:.0f} MB (RSS {before:.0f} → peak {peak:.0f} MB) in {seconds:.1f} s; close codes {counted}"


def half_sent(port: int, count: int, watch: float) -> str:
    socks: list[socket.socket | None] = []
    for _ in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /api/examples HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            s.setblocking(False)
            socks.append(s)
        except OSError:
            socks.append(None)
    started = time.monotonic()
    t = time.monotonic()
    try:
        status = str(request(port, "GET", "/api/examples", source="127.0.0.2"))
    except OSError as e:
        status = type(e).__name__
    answered = time.monotonic() - t
    live = [s for s in socks if s is not None]
    shares: dict[float, float] = {}
    for mark in (5.0, 10.0, watch):
        while time.monotonic() - started < mark:
            select.select(live[:500] or [], [], [], 0.25)
            live = [s for s in live if not _closed(s)]
        shares[mark] = 1 - len(live) / count
    for held in socks:
        if held is not None:
            held.close()
    closed = ", ".join(f"{share:.0%} after {mark:.0f} s" for mark, share in shares.items())
    return f"another address answered {status} in {answered * 1000:.0f} ms; half-sent closed: {closed}"


def _closed(s: socket.socket) -> bool:
    try:
        s.recv(4096)
        return True  # a 408 or the end: the server gave up on it
    except BlockingIOError:
        return False
    except OSError:
        return True


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.lan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--followers", type=int, default=40)
    parser.add_argument("--frame-mb", type=int, default=8)
    parser.add_argument("--half-sent", type=int, default=2000)
    parser.add_argument("--watch", type=float, default=25.0, help="seconds to watch the half-sent connections")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.half_sent + 1000)), hard))
    with tempfile.TemporaryDirectory() as tmp:
        for kind, name in (("guarded", "attention3d"), ("plain", "plain uvicorn (reference)")):
            with server(kind, Path(tmp)) as (port, pid):
                figure = frames(port, pid, args.followers, args.frame_mb)
                print(f"{name}: {args.followers} followers × {args.frame_mb} MB frames: {figure}", flush=True)
            with server(kind, Path(tmp)) as (port, _):
                figure = half_sent(port, args.half_sent, args.watch)
                print(f"{name}: {args.half_sent} half-sent requests from one address: {figure}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
