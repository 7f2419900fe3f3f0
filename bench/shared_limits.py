"""What the per-address limits cost when every worker shares them in Redis (`--workers N --redis`, issue 39),
against the same decisions counted in the process (one worker), in the same run and event loop.

    .venv/bin/python -m bench.shared_limits           options: --connections 2000 --requests 20000 --workers 2

Connections: each new connection asks Redis once (app.web.shared_counts ADMIT) and tells it when it
closes (in the background); requests: a process takes a few request tokens at a time (the lease:
rate ÷ workers, 25 at the default 50 a second and 2 workers) and spends them itself. Reported: the
time one decision takes on the event loop, in µs, shared and local, and their ratio. The Redis is a
redis-server started here, on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from contextlib import ExitStack

from app import limits
from app.web.server import Addresses
from app.web.shared_counts import SharedCounts
from bench.rooms import start_redis


async def connections(shared: SharedCounts, local: Addresses, n: int) -> tuple[float, float]:
    """µs per connection admitted (and released): (shared, local)."""
    started = time.perf_counter()
    for i in range(n):
        address = f"10.1.{i // 250}.{i % 250}"
        assert await shared.admit(address, 0)
        shared.release(address, 0)
    await asyncio.sleep(0.2)  # the releases, sent in the background, land
    shared_us = (time.perf_counter() - started - 0.2) / n * 1e6
    started = time.perf_counter()
    for i in range(n):
        assert local.allowed(f"10.1.{i // 250}.{i % 250}", 0)
    return shared_us, (time.perf_counter() - started) / n * 1e6


async def requests(shared: SharedCounts, local: Addresses, n: int) -> tuple[float, float]:
    """µs per request decided, one address at a time, each within its rate: (shared, local)."""
    per = limits.REQUEST_RATE  # a second's worth for each address: all allowed
    started = time.perf_counter()
    for i in range(n):
        assert await shared.request(f"10.2.{i // per // 250}.{i // per % 250}")
    shared_us = (time.perf_counter() - started) / n * 1e6
    started = time.perf_counter()
    for i in range(n):
        assert local.request(f"10.2.{i // per // 250}.{i // per % 250}")
    return shared_us, (time.perf_counter() - started) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with ExitStack() as stack:
        url = start_redis(stack)
        local = Addresses()
        shared = SharedCounts(url, args.workers, local.max_open, local.connection_rate, local.request_rate)

        async def run() -> None:
            await shared.request("warm-up")  # the connection to Redis and the scripts' first load
            c = await connections(shared, local, args.connections)
            r = await requests(shared, local, args.requests)
            load = os.getloadavg()[0]
            print(f"load {load:.1f} on {os.cpu_count()} cores; {args.workers} workers, lease {shared.lease()}")
            for name, (s, lo) in (("a new connection", c), ("a request", r)):
                print(f"{name:<17} shared {s:7.1f} µs   local {lo:6.1f} µs   shared ÷ local ×{s / lo:.0f}")

        asyncio.run(run())


if __name__ == "__main__":
    main()
