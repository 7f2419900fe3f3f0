"""Fan-out of a room: 200 WebSocket followers on loopback, 50 state changes.

    .venv/bin/python -m bench.rooms                 one server process (the default set-up)
    .venv/bin/python -m bench.rooms --redis         two server processes sharing the room through a
                                                    redis-server started here (followers split between them)
    options: --followers 200 --changes 50 --gap 0.1

The presenter PUTs 50 view states, one every `gap` seconds; each follower records when each state
arrives. Latency = arrival − the moment the PUT was sent, on the same clock (everything runs on this
machine, the followers in one asyncio process). Reported: p50, p99 and max over every (follower,
change) pair, and the messages lost (expected followers × changes; goals: p99 ≤ 100 ms, 0 lost).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import websockets

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-teacher-token-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(10)


def start_server(stack: ExitStack, data: Path, **env: str) -> tuple[str, int]:
    port = free_port()
    environ = {**os.environ, "ATTENTION_BACKEND": "numpy", "ATTENTION_TEACHER_TOKEN": TOKEN}
    environ["ATTENTION_DATA_DIR"] = str(data)
    cmd = [sys.executable, "-m", "app", "--host", "127.0.0.1", "--port", str(port)]  # as `attention3d` runs it
    log = stack.enter_context(open(data / f"server-{port}.log", "wb"))  # noqa: SIM115
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**environ, **env}, stdout=log, stderr=log)
    stack.callback(stop, proc)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(base + "/api/examples", timeout=1):
                return base, proc.pid
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the server did not start") from None
            time.sleep(0.1)


def start_redis(stack: ExitStack) -> str:
    exe = shutil.which("redis-server")
    if exe is None:
        raise SystemExit("--redis needs Debian's redis-server (apt-get install redis-server)")
    port = free_port()
    cmd = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    stack.callback(stop, proc)
    time.sleep(0.3)
    return f"redis://127.0.0.1:{port}/0"


def request(method: str, url: str, body: object = None, secret: str = TOKEN) -> object:
    data = None if body is None else json.dumps(body).encode()
    headers = {"authorization": f"Bearer {secret}", "content-type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers)) as r:
        raw = r.read()
        return json.loads(raw) if raw else None


def device(i: int) -> str:
    """The loopback address of follower i: 8 followers a device, as a class's phones and laptops (the
    server allows 8 followers of one address in a room: app/classroom/limits.py)."""
    n = i // 8
    return f"127.1.{n // 250}.{1 + n % 250}"


async def follow(
    url: str, arrivals: dict[int, float], ready: asyncio.Event, done: asyncio.Event, source: str = "127.0.0.1"
) -> None:
    async with websockets.connect(url, max_queue=None, local_addr=(source, 0)) as ws:
        json.loads(await ws.recv())  # the hello
        ready.set()
        while not done.is_set():
            try:
                text = await asyncio.wait_for(ws.recv(), 0.5)
            except TimeoutError:
                continue
            now = time.perf_counter()
            message = json.loads(text)
            state = message.get("state")
            if state and "focus" in state:
                arrivals.setdefault(int(state["focus"]), now)  # dicts keep the order they were filled in


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of the server processes so far (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


async def run(bases: list[str], pids: list[int], followers: int, changes: int, gap: float) -> dict[str, float]:
    room = request("POST", bases[0] + "/api/rooms")
    assert isinstance(room, dict)
    code, key = room["code"], room["presenter_key"]
    arrivals: list[dict[int, float]] = [{} for _ in range(followers)]
    readies = [asyncio.Event() for _ in range(followers)]
    done = asyncio.Event()
    tasks = []
    for i in range(followers):
        url = bases[i % len(bases)].replace("http", "ws") + f"/api/rooms/{code}/ws"
        tasks.append(asyncio.create_task(follow(url, arrivals[i], readies[i], done, device(i))))
        if i % 20 == 19:
            await asyncio.sleep(0.05)  # a class arrives over a few seconds, not in one packet
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 60)
    await asyncio.sleep(1.0)  # the joins' follower counts have gone out
    sent: dict[int, float] = {}
    state = {"chapter": "steps", "example": "the-cat-ate-its-fish", "step": "softmax", "mask": "full"}
    loop = asyncio.get_running_loop()
    cpu_before = cpu_seconds(pids)
    for n in range(changes):
        sent[n] = time.perf_counter()
        url = f"{bases[0]}/api/rooms/{code}/state"
        await loop.run_in_executor(None, request, "PUT", url, {**state, "focus": str(n)}, key)
        await asyncio.sleep(gap)
    await asyncio.sleep(2.0)  # stragglers
    cpu = cpu_seconds(pids) - cpu_before
    done.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    latencies = sorted((a[n] - sent[n]) * 1000 for a in arrivals for n in a if n in sent)
    expected = followers * changes
    out_of_order = sum(1 for a in arrivals if list(a) != sorted(a))
    return {
        "out_of_order": out_of_order,
        "followers": followers,
        "changes": changes,
        "delivered": len(latencies),
        "lost": expected - len(latencies),
        "p50_ms": statistics.median(latencies),
        "p99_ms": latencies[max(0, int(len(latencies) * 0.99) - 1)],
        "max_ms": latencies[-1],
        "cpu_ms_per_change": cpu / changes * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.rooms", description=__doc__.split("\n\n")[0])
    parser.add_argument("--followers", type=int, default=200)
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between two state changes")
    parser.add_argument("--redis", action="store_true", help="two processes sharing the room through Redis")
    args = parser.parse_args()
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        if args.redis:
            url = start_redis(stack)
            servers = [start_server(stack, Path(tmp), ATTENTION_REDIS_URL=url) for _ in range(2)]
        else:
            servers = [start_server(stack, Path(tmp))]
        bases, pids = [b for b, _ in servers], [p for _, p in servers]
        result = asyncio.run(run(bases, pids, args.followers, args.changes, args.gap))
    setup = "2 processes + Redis" if args.redis else "1 process"
    print(
        f"{setup}: {result['followers']} followers × {result['changes']} changes: "
        f"fan-out latency p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, max {result['max_ms']:.1f} ms; "
        f"lost {result['lost']} of {result['followers'] * result['changes']}, "
        f"followers that saw changes out of order: {result['out_of_order']} (goals: p99 ≤ 100 ms, 0 lost)"
    )
    print(
        f"server CPU per change (PUT + fan-out to {result['followers']}): {result['cpu_ms_per_change']:.1f} ms; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
