"""One machine's cores: `attention3d --workers 1` against `--workers N`, 200 users at once.

    .venv/bin/python -m bench.workers               N = the machine's cores (at least 2)
    options: --users 200 --workers N --seconds 15 --clients 4

Each run starts `attention3d --workers W --redis URL` (a redis-server started here; more than one
worker needs it for the rooms) on a fresh data folder, opens a room and drives it once, then 200
users (asyncio + httpx, spread over `clients` processes) each repeat, as fast as answers come, what
a class does over HTTP: compute attention on their own Q, K, V (POST /api/attention, 8 words, d=16),
read the room (GET /api/rooms/{code}) and list the lessons (GET /api/lessons, teacher token).
Reported per run: requests per second, p50/p95/p99 latency, errors; then N workers ÷ 1 worker.
The load runs on the same machine as the server: on a small machine the users take cores too. The
users share one address, so the server's per-address limits (app/limits.py) are lifted for the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import httpx

from bench.rooms import ROOT, TOKEN, free_port, request, start_redis, stop

STATE = {"chapter": "steps", "example": "the-cat-ate-its-fish", "step": "softmax", "focus": "3"}


def start(stack: ExitStack, workers: int, redis: str) -> tuple[str, str]:
    """attention3d with `workers` processes; (base URL, room code)."""
    port = free_port()
    data = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-workers-")))
    environ = {**os.environ, "ATTENTION_BACKEND": "numpy", "ATTENTION_TEACHER_TOKEN": TOKEN}
    environ.pop("ATTENTION_DATABASE_URL", None)
    # the 200 users all come from this machine's one address: lift the per-address limits (docs/security.md)
    environ.update(
        ATTENTION_CONNECTIONS_PER_ADDRESS="100000", ATTENTION_CONNECTION_RATE="100000", ATTENTION_REQUEST_RATE="1000000"
    )
    cmd = [sys.executable, "-m", "app", "--port", str(port), "--workers", str(workers), "--redis", redis]
    log = stack.enter_context(open(data / "server.log", "wb"))  # noqa: SIM115
    proc = subprocess.Popen([*cmd, "--data-dir", str(data)], cwd=ROOT, env=environ, stdout=log, stderr=log)
    stack.callback(stop, proc)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(base + "/api/examples", timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                why = (data / "server.log").read_text()
                raise SystemExit(f"attention3d --workers {workers} did not start: {why}") from None
            time.sleep(0.2)
    room = request("POST", base + "/api/rooms")
    assert isinstance(room, dict)
    request("PUT", f"{base}/api/rooms/{room['code']}/state", STATE, secret=room["presenter_key"])
    return base, room["code"]


def attention_body(rng: random.Random) -> dict[str, object]:
    def matrix() -> list[list[float]]:
        return [[round(rng.uniform(-2, 2), 3) for _ in range(16)] for _ in range(8)]

    return {"tokens": [f"w{i}" for i in range(8)], "q": matrix(), "k": matrix(), "v": matrix(), "mask": "full"}


async def user(
    client: httpx.AsyncClient, base: str, code: str, window: tuple[float, float], seed: int
) -> tuple[list[float], int]:
    rng = random.Random(seed)
    begin, until = window
    await asyncio.sleep(max(0.0, begin - time.time()))  # every user of every process starts together
    times: list[float] = []
    errors = 0
    teacher = {"authorization": f"Bearer {TOKEN}"}
    while time.time() < until:
        for method, url, body, headers in (
            ("POST", base + "/api/attention", attention_body(rng), {}),
            ("GET", f"{base}/api/rooms/{code}", None, {}),
            ("GET", base + "/api/lessons?limit=20", None, teacher),
        ):
            sent = time.perf_counter()
            try:
                r = await client.request(method, url, json=body, headers=headers)
                ok = r.status_code == 200
            except httpx.HTTPError:
                ok = False
            times.append(time.perf_counter() - sent)
            errors += not ok
    return times, errors


def client_process(args: tuple[str, str, int, tuple[float, float], int]) -> tuple[list[float], int]:
    base, code, users, window, first = args

    async def run() -> tuple[list[float], int]:
        limits = httpx.Limits(max_connections=users, max_keepalive_connections=users)
        async with httpx.AsyncClient(limits=limits, timeout=30) as client:
            results = await asyncio.gather(*(user(client, base, code, window, first + i) for i in range(users)))
        return [t for times, _ in results for t in times], sum(e for _, e in results)

    return asyncio.run(run())


def measure(base: str, code: str, users: int, seconds: float, clients: int) -> dict[str, float]:
    begin = time.time() + 5  # the client processes start (and import) before it
    window = (begin, begin + seconds)
    shares = [users // clients + (i < users % clients) for i in range(clients)]
    firsts = [sum(shares[:i]) for i in range(clients)]
    with multiprocessing.get_context("spawn").Pool(clients) as pool:
        parts = pool.map(client_process, [(base, code, n, window, f) for n, f in zip(shares, firsts, strict=True)])
    times = sorted(t for part, _ in parts for t in part)
    q = statistics.quantiles(times, n=100)
    return {
        "rps": len(times) / seconds,
        "p50": q[49] * 1000,
        "p95": q[94] * 1000,
        "p99": q[98] * 1000,
        "errors": sum(e for _, e in parts),
        "requests": len(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--workers", type=int, default=max(2, os.cpu_count() or 2))
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--clients", type=int, default=4, help="processes the users are spread over")
    args = parser.parse_args()
    print(f"{args.users} users for {args.seconds:g} s each run; {os.cpu_count()} cores; load on the same machine")
    rows = {}
    with ExitStack() as stack:
        redis = start_redis(stack)
        for workers in (1, args.workers):
            with ExitStack() as run:
                base, code = start(run, workers, redis)
                measure(base, code, min(args.users, 20), 2, 1)  # warm every worker's imports and caches
                rows[workers] = measure(base, code, args.users, args.seconds, args.clients)
            r = rows[workers]
            print(
                f"--workers {workers:<2}  {r['rps']:7.0f} requests/s   p50 {r['p50']:6.1f} ms   p95 {r['p95']:6.1f} ms"
                f"   p99 {r['p99']:6.1f} ms   errors {r['errors']:.0f} of {r['requests']:.0f}"
            )
    one, many = rows[1], rows[args.workers]
    print(
        f"{args.workers} workers ÷ 1 worker: throughput ×{many['rps'] / one['rps']:.2f}, "
        f"p50 ×{many['p50'] / one['p50']:.2f}, p99 ×{many['p99'] / one['p99']:.2f}"
    )
    print(json.dumps({str(k): {n: round(v, 2) for n, v in r.items()} for k, r in rows.items()}))


if __name__ == "__main__":
    main()
