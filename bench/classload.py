"""A class at once: users looping through what the page sends, against a real server process.

    .venv/bin/python -m bench.classload              30 users, then 200
    .venv/bin/python -m bench.classload 30 60        the class sizes given

Each user (its own connections, as a browser's: up to 6, Chromium's Accept-Encoding) loops for
SECONDS: the page loads (the HTML, its versioned static files, GET /api/model and /api/examples),
three 5-token requests (the hand-set example, every stage, JSON), then a new sentence of 15-20
words as the page sends it (tests/browser/test_requests.py: every stage under the full mask and
the causal one's weights and output as frames, at once, or the full mask's alone for a sentence too
long to compare the masks side by side, as static/js/model.js decides; POST /api/overview once they
are in, as static/js/sentence.js asks for it after the view's answer), with a
pause of 0.5-1.5 s between actions (a person reads). A 503 is counted as a refusal and must carry
a Retry-After, which the user honours (as static/js/api.js does) before going on; anything else
that is not a 200 is an error.

Printed per class size: new-sentence latency p50 / p99 (the view: its frames read, what the page
waits on to draw), the same with the overview's answer read too, 5-token p50 / p99, requests,
refusals (503 + Retry-After), errors.
    30 users: new-sentence p99 ≤ 0.5 s, 0 errors        200 users: 0 errors, every refusal a 503 + Retry-After
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.model import free_port, percentile, student_sentence

ROOT = Path(__file__).resolve().parents[1]
SECONDS = 40.0
FRAME = "application/x-attention-frame"
BROWSER = {"accept-encoding": "gzip, deflate, br, zstd"}
COMPARE_MAX = 20  # static/js/model.js: the most rows the page compares side by side (it asks for both masks)


@dataclass
class Tally:
    sentences: list[float] = field(default_factory=list)
    with_overview: list[float] = field(default_factory=list)
    small: list[float] = field(default_factory=list)
    requests: int = 0
    refusals: int = 0
    refusals_without_retry_after: int = 0
    resent: int = 0  # GETs sent again on a kept-alive connection found closed
    errors: list[str] = field(default_factory=list)


class Refused(Exception):
    def __init__(self, retry_after: float) -> None:
        self.retry_after = retry_after


async def checked(tally: Tally, response: httpx.Response) -> httpx.Response:
    tally.requests += 1
    await response.aread()
    if response.status_code == 503:
        tally.refusals += 1
        after = response.headers.get("retry-after", "")
        if not after.isdigit():
            tally.refusals_without_retry_after += 1
            raise Refused(1.0)
        raise Refused(float(after))
    if response.status_code != 200:
        tally.errors.append(f"{response.request.url.path}: {response.status_code} {response.text[:120]}")
    return response


async def send(client: httpx.AsyncClient, tally: Tally, method: str, url: str, **kw: Any) -> httpx.Response:
    """A request, sent again once when the kept-alive connection it went out on turns out closed
    before any answer (the server closes idle connections after a few seconds; Chromium sends the
    request again on a new connection then too)."""
    try:
        return await client.request(method, url, **kw)
    except (httpx.RemoteProtocolError, httpx.ReadError):
        tally.resent += 1
        return await client.request(method, url, **kw)


async def get(client: httpx.AsyncClient, tally: Tally, url: str) -> httpx.Response:
    return await send(client, tally, "GET", url)


async def page_load(client: httpx.AsyncClient, tally: Tally) -> None:
    html = (await checked(tally, await get(client, tally, "/"))).text
    assets = re.findall(r'(?:href|src)="(/static/[^"]+)"', html)  # its stylesheets and scripts
    answers = await asyncio.gather(*(get(client, tally, a) for a in [*assets, "/api/model", "/api/examples"]))
    for a in answers:
        await checked(tally, a)


async def small(client: httpx.AsyncClient, tally: Tally, example: dict[str, object]) -> None:
    t0 = time.perf_counter()
    await checked(tally, await send(client, tally, "POST", "/api/attention", json=example))
    tally.small.append(time.perf_counter() - t0)


async def new_sentence(client: httpx.AsyncClient, tally: Tally, text: str) -> None:
    view = {"sentence": text, "layer": 0, "head": 0}
    frame = {"accept": FRAME}
    t0 = time.perf_counter()
    asked = [send(client, tally, "POST", "/api/attention", json={**view, "mask": "full"}, headers=frame)]
    if len(text.split()) + 2 <= COMPARE_MAX:  # the masks compared side by side: the causal one comes too
        causal = {**view, "mask": "causal", "stages": ["weights", "output"]}
        asked.append(send(client, tally, "POST", "/api/attention", json=causal, headers=frame))
    answers = await asyncio.gather(*asked)
    refused: Refused | None = None
    for a in answers:
        try:
            await checked(tally, a)
        except Refused as e:
            refused = e
    if refused:
        raise refused
    tally.sentences.append(time.perf_counter() - t0)
    await checked(tally, await send(client, tally, "POST", "/api/overview", json={"sentence": text}))
    tally.with_overview.append(time.perf_counter() - t0)


async def user(base: str, tally: Tally, seed: int, until: float, example: dict[str, object]) -> None:
    rng = random.Random(seed)
    limits = httpx.Limits(max_connections=6)
    async with httpx.AsyncClient(base_url=base, headers=BROWSER, limits=limits, timeout=60) as client:
        await asyncio.sleep(rng.uniform(0, 3))  # a class does not arrive in one millisecond
        while time.perf_counter() < until:
            for action in ("load", "small", "small", "small", "sentence"):
                try:
                    if action == "load":
                        await page_load(client, tally)
                    elif action == "small":
                        await small(client, tally, example)
                    else:
                        await new_sentence(client, tally, student_sentence(rng))
                except Refused as e:
                    await asyncio.sleep(e.retry_after)
                except httpx.HTTPError as e:
                    tally.errors.append(f"{action}: {type(e).__name__} {e}")
                await asyncio.sleep(rng.uniform(0.5, 1.5))
                if time.perf_counter() >= until:
                    return


async def a_class(base: str, users: int, seconds: float) -> Tally:
    tally = Tally()
    async with httpx.AsyncClient(base_url=base) as client:
        ex = (await client.get("/api/examples/the-cat-ate-its-fish")).json()
    example = {"tokens": ex["tokens"], "q": ex["q"], "k": ex["k"], "v": ex["v"], "mask": "full"}
    until = time.perf_counter() + seconds
    await asyncio.gather(*(user(base, tally, i, until, example) for i in range(users)))
    return tally


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "ATTENTION_BACKEND": "numpy", "ATTENTION_DATA_DIR": tempfile.mkdtemp(prefix="bench-class-")}
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        "app.main:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *os.environ.get("BENCH_UVICORN", "").split(),
    ]
    proc = subprocess.Popen([*cmd, "--log-level", "warning"], cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            httpx.post(base + "/api/attention", json={"sentence": "warm up", "layer": 0, "head": 0}, timeout=60)
            break
        except httpx.TransportError:
            time.sleep(0.1)
    return proc, base


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [30, 200]
    proc, base = start_server()
    try:
        print(f"each user loops for {SECONDS:.0f} s: page load, 3 × 5-token request, a new sentence (2–3 requests)")
        print(
            f"{'users':>5} {'sentence p50':>13} {'p99':>7} {'+overview p99':>14} {'5-token p50':>12} {'p99':>7} "
            f"{'requests':>9} "
            f"{'503s':>5} {'no Retry-After':>15} {'errors':>7} {'GETs resent':>12}  load"
        )
        for users in sizes:
            t = asyncio.run(a_class(base, users, SECONDS))
            s = t.sentences or [float("nan")]
            whole = t.with_overview or [float("nan")]
            t.small = t.small or [float("nan")]
            print(
                f"{users:5} {statistics.median(s) * 1e3:10.0f} ms {percentile(s, 99) * 1e3:4.0f} ms "
                f"{percentile(whole, 99) * 1e3:11.0f} ms "
                f"{statistics.median(t.small) * 1e3:9.0f} ms {percentile(t.small, 99) * 1e3:4.0f} ms "
                f"{t.requests:9} {t.refusals:5} {t.refusals_without_retry_after:15} {len(t.errors):7} {t.resent:12}  "
                f"{os.getloadavg()[0]:.1f}"
            )
            for e in t.errors[:5]:
                print("   error:", e)
            if users <= 30:
                goal = percentile(s, 99) <= 0.5 and not t.errors
                print(f"      goal: new-sentence p99 ≤ 500 ms, 0 errors: {'met' if goal else 'MISSED'}")
            else:
                goal = not t.errors and t.refusals_without_retry_after == 0
                print(f"      goal: 0 errors, every refusal a 503 with Retry-After: {'met' if goal else 'MISSED'}")
        print(json.dumps({"sentences_done": len(s)}))
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
