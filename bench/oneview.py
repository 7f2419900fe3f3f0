"""A class opening one view at once: what 25 phones asking the same thing cost the server, against one phone.

    .venv/bin/python -m bench.oneview [--phones 25] [--rounds 3]

A real server process (bench.classload's). For each request a chapter's page sends when it opens (Look
inside's lens, a head switched off and rollout, today's models, word order, the scaling chapter), each
round asks it with a new sentence (or d_k) first once, alone, then from `phones` clients at once with
another new one. Reported: the server's CPU for the class over its CPU for the one phone (the median
over the rounds; goal ≤ 2×: the class's answer is made once, app.web.transport.KEPT; the CPU is read
from /proc in 10 ms ticks, so a view that costs one phone ~10 ms shows a coarse ratio), the class's
slowest answer, and any answer that is not a 200 or not the same bytes as the others.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx

from bench.classload import start_server
from bench.decoder import DECODER, cpu_seconds

TEXT = "the cat ate its fish because it was hungry and then the dog slept near the warm door"


def sentence(k: int) -> str:
    """A new sentence for each k below 18 × 17: TEXT's 18 words turned by k places, k // 18 of them left out."""
    words = TEXT.split()
    turned = words[k % len(words) :] + words[: k % len(words)]
    return " ".join(turned[k // len(words) :])


# route, and the body for the k-th new sentence
VIEWS: list[tuple[str, Callable[[int], dict[str, Any]]]] = [
    ("/api/lens", lambda k: {"model": DECODER, "prompt": sentence(k)}),
    ("/api/ablate", lambda k: {"model": DECODER, "prompt": sentence(k), "heads": [[3, 1]], "layer": 3, "head": 1}),
    ("/api/rollout", lambda k: {"model": DECODER, "sentence": sentence(k)}),
    ("/api/decoder/today", lambda k: {"sentence": sentence(k), "layer": 3, "head": 0}),
    ("/api/positions", lambda k: {"words": sentence(k).split()[:5], "order": [4, 1, 2, 3, 0]}),
    ("/api/scaling", lambda k: {"d_k": 100 + k}),
]


async def ask(
    client: httpx.AsyncClient, pid: int, route: str, body: dict[str, Any], n: int
) -> tuple[float, float, str]:
    """(server CPU, slowest answer's seconds, what went wrong) for `n` clients asking `body` at once."""
    start_cpu, start = cpu_seconds(pid), time.perf_counter()
    answers = await asyncio.gather(*(client.post(route, json=body) for _ in range(n)))
    wall = time.perf_counter() - start
    await asyncio.sleep(0.05)  # the server's last bytes out
    codes = sorted({r.status_code for r in answers})
    wrong = "" if codes == [200] and len({r.content for r in answers}) == 1 else f"statuses {codes}"
    return cpu_seconds(pid) - start_cpu, wall, wrong


async def bench(base: str, pid: int, phones: int, rounds: int) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=httpx.Limits(max_connections=phones)) as client:
        warm = 2 * rounds * len(VIEWS)  # the first k the rounds do not use
        for route, body in VIEWS:  # the models loaded and each route's first work done, on a sentence not asked again
            warmed = await client.post(route, json=body(warm))
            assert warmed.status_code == 200, (route, warmed.text[:300])
        print(f"{'view':<20} {'1 phone CPU':>12} {f'{phones} phones CPU':>15} {'ratio':>6} {'slowest':>8}  problems")
        for v, (route, body) in enumerate(VIEWS):  # sentences of its own: no view finds another's trace
            one, many, slowest, problems = [], [], [], []
            for r in range(rounds):
                k = 2 * (rounds * v + r)
                cpu1, _, wrong1 = await ask(client, pid, route, body(k), 1)
                cpu_n, wall, wrong_n = await ask(client, pid, route, body(k + 1), phones)
                one.append(cpu1)
                many.append(cpu_n)
                slowest.append(wall)
                problems += [w for w in (wrong1, wrong_n) if w]
            a, b = statistics.median(one), statistics.median(many)
            print(
                f"{route:<20} {a * 1000:>10.0f}ms {b * 1000:>13.0f}ms {b / max(a, 0.01):>5.1f}× "
                f"{max(slowest) * 1000:>6.0f}ms  {'; '.join(problems) or 'none'}",
                flush=True,
            )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {rounds} rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--phones", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    proc, base = start_server()
    try:
        asyncio.run(bench(base, proc.pid, args.phones, args.rounds))
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
