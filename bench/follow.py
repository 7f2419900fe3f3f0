"""A class following its teacher's page: how soon each phone shows what the projector shows.

    .venv/bin/python -m bench.follow             views: 3 Chromium follower pages, 20 view changes
    .venv/bin/python -m bench.follow writing     Write: the projector writes 16 tokens, 30 followers
    options (writing): --followers 30 --pages 3 --tokens 16 --detail   (needs Debian's chromium, as the browser tests)

A real server process (as `attention3d` runs it), and real Chromium pages; every time is Date.now() in
a page or time.time() here, one clock (everything runs on this machine).

views: the presenter PUTs 20 view states (step and focus of the cat example, 0.5 s apart); each follower
page records when it has applied and drawn each one (applyViewState resolved: the page has asked the
server for the new view's numbers and drawn them). Reported: p50, p99, max.

writing: the presenter is a real page (the teacher link, Present, chapter 10): it writes --tokens tokens
after a prompt, streaming (POST /api/generate). Its followers: --pages Chromium phone pages (390×844)
and WebSocket followers for the rest (each from a loopback address of its own, as a class's phones),
which do what a phone's page does with the room's messages: take the tokens written so far from each
state (its `live` parameter), and when the writing ends (`live` empty, `n` the tokens written) load the
written text's numbers once (POST /api/generate, the page's own request: write/params.js requestOf).
Lag of token i at a follower = when it first shows token i (a page: its panel's data-written ≥ i + 1;
a socket: a state, or the loaded answer, holding token i) − when the projector drew it. Reported:
p50, p99, max over every (follower, token); goal p99 ≤ 1 s. Server CPU (user + system, /proc): the same
writing (another prompt of as many tokens) by the projector alone and then with its class, from the
click on Write until every follower holds every token, and their ratio (goal ≤ 1.5).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import websockets

from bench.model import MODEL_CACHE_ENV, decoder_converted
from bench.rooms import TOKEN, cpu_seconds, device, request, start_server

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
STEPS = ["score", "scale", "mask", "softmax", "mix"]
WATCH = """() => {
  window.__applied = [];
  const bar = document.querySelector('[data-testid=follow-bar]');
  new MutationObserver(() => {
    const s = bar.dataset.applied;
    if (s && s !== 'pending') window.__applied.push([Date.now(), JSON.parse(s).step + '/' + JSON.parse(s).focus]);
  }).observe(bar, { attributes: true, attributeFilter: ['data-applied'] });
}"""
# a Write panel's tokens on screen: [Date.now(), how many] at every change
WRITTEN = """() => {
  window.__written = [];
  const panel = document.getElementById('chapter-panel');
  const note = () => window.__written.push([Date.now(), Number(panel.dataset.written || 0)]);
  new MutationObserver(note).observe(panel, { attributes: true, attributeFilter: ['data-written'] });
}"""
PROMPTS = ("The little robot walked into the", "The little bird flew into the")  # 6 tokens each: equal work
DECODER = "smollm2-135m"
DRAW = 7  # the Write chapter's fixed draw (write/params.js)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * q) - 1)]


# ---- views ----------------------------------------------------------------------------------------


def views() -> None:
    from playwright.sync_api import sync_playwright

    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        base, _ = start_server(stack, Path(tmp), **MODEL_CACHE_ENV)
        decoder_converted(base)  # the followers' first page would start it
        room = request("POST", base + "/api/rooms", secret=TOKEN)
        assert isinstance(room, dict)
        url = f"{base}/api/rooms/{room['code']}/state"
        first = {"chapter": "steps", "example": "the-cat-ate-its-fish", "step": "score", "mask": "full", "focus": "0"}
        request("PUT", url, first, room["presenter_key"])
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        pages = []
        for _ in range(3):
            page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
            page.goto(f"{base}/?room={room['code']}")
            page.wait_for_selector('[data-testid=follow-bar][data-status="live"]')
            page.wait_for_selector('#app[data-ready="true"]')
            page.evaluate(WATCH)
            pages.append(page)
        sent: dict[str, float] = {}
        for n in range(20):
            state = {**first, "step": STEPS[(n // 5 + 1) % 5], "focus": str(n % 5)}  # 20 different views
            key = f"{state['step']}/{state['focus']}"
            sent[key] = time.time() * 1000
            request("PUT", url, state, room["presenter_key"])
            time.sleep(0.5)
        latencies = []
        for page in pages:
            seen = {key: t for t, key in page.evaluate("window.__applied")}
            latencies += [seen[k] - sent[k] for k in sent if k in seen]
        browser.close()
    lost = 3 * len(sent) - len(latencies)
    print(
        f"3 follower pages × {len(sent)} changes: PUT sent → page drawn: p50 {statistics.median(latencies):.0f} ms, "
        f"p99 {percentile(latencies, 0.99):.0f} ms, max {max(latencies):.0f} ms; not applied: {lost}"
    )
    print(json.dumps({"latencies_ms": [round(x) for x in sorted(latencies)]}))


# ---- writing ----------------------------------------------------------------------------------------


def request_of(state: dict[str, Any]) -> dict[str, Any]:
    """The request a phone's Write page makes for the written text (write/params.js requestOf)."""
    temperature, top_k, top_p = (state.get("used") or "0,0,1").split(",")
    return {
        "model": DECODER,
        "prompt": state["prompt"],
        "max_new_tokens": int(state["n"]),
        "temperature": float(temperature),
        "top_k": int(top_k),
        "top_p": float(top_p),
        "seed": DRAW,
        "layer": int(state.get("layer") or 5),
        "head": int(state.get("head") or 0),
    }


class SocketPhone:
    """A follower over the room's WebSocket that does with the writing what a phone's page does."""

    def __init__(self, ws_url: str, base: str, address: str) -> None:
        self.ws_url, self.base, self.address = ws_url, base, address
        self.seen: dict[int, float] = {}  # token index → when this follower first held it (ms)
        self.loaded = asyncio.Event()
        self.joined = asyncio.Event()

    def hold(self, count: int) -> None:
        now = time.time() * 1000
        for i in range(count):
            self.seen.setdefault(i, now)

    async def run(self, stop: asyncio.Event) -> None:
        # plain HTTP: no TLS context (making one loads the CA file, ~0.5 s of this loop on a busy machine)
        transport = httpx.AsyncHTTPTransport(local_address=self.address, verify=False)
        async with (
            websockets.connect(self.ws_url, max_queue=None, local_addr=(self.address, 0)) as ws,
            httpx.AsyncClient(transport=transport, base_url=self.base, timeout=300) as http,
        ):
            await ws.recv()  # the hello: the room as it is
            self.joined.set()
            while not stop.is_set():
                try:
                    message = json.loads(await asyncio.wait_for(ws.recv(), 0.5))
                except TimeoutError:
                    continue
                state = message.get("state") or {}
                if state.get("live"):
                    self.hold(len(json.loads(state["live"])["t"]))
                elif int(state.get("n") or 0) and not self.loaded.is_set():
                    r = await http.post("/api/generate", json=request_of(state), headers={"accept": "application/json"})
                    r.raise_for_status()
                    self.hold(len(r.json()["tokens"]))
                    self.loaded.set()


class Class:
    """The WebSocket followers of a room, run in an event loop of their own (a thread)."""

    def __init__(self, base: str, code: str, n: int) -> None:
        ws_url = base.replace("http", "ws") + f"/api/rooms/{code}/ws"
        self.phones = [SocketPhone(ws_url, base, device(i)) for i in range(n)]
        self.loop = asyncio.new_event_loop()
        self.stop = asyncio.Event()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._run(),), daemon=True)
        self.thread.start()

    async def _run(self) -> None:
        ended = await asyncio.gather(*(phone.run(self.stop) for phone in self.phones), return_exceptions=True)
        for error in {repr(e) for e in ended if isinstance(e, BaseException)}:
            print(f"a socket follower failed: {error}")

    def wait(self, what: str, seconds: float) -> None:
        async def all_set() -> None:
            await asyncio.wait_for(asyncio.gather(*(getattr(p, what).wait() for p in self.phones)), seconds)

        asyncio.run_coroutine_threadsafe(all_set(), self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)


def first_at(written: list[list[float]], tokens: int) -> dict[int, float]:
    """When a page first showed each token, from its [time, data-written] records."""
    at: dict[int, float] = {}
    for t, count in written:
        for i in range(int(count)):
            at.setdefault(i, t)
    return {i: at[i] for i in range(tokens) if i in at}


def write_once(page: Any, prompt: str, tokens: int) -> float:
    """The projector writes `tokens` tokens after `prompt`; returns when Write was pressed (ms)."""
    page.evaluate(WRITTEN)
    clicked = time.time() * 1000
    # as the teacher's typing and click do (the projector view may have folded the form into a tab)
    page.evaluate(
        """([prompt, tokens]) => {
          const form = document.querySelector('[data-testid=write-form]');
          form.querySelector('[data-testid=write-prompt]').value = prompt;
          form.querySelector('[data-testid=write-count]').value = String(tokens);
          form.requestSubmit();
        }""",
        [prompt, tokens],
    )
    page.wait_for_selector(f'#chapter-panel[data-writing="false"][data-written="{tokens}"]', timeout=300_000)
    return clicked


def writing(followers: int, pages: int, tokens: int, detail: bool = False) -> None:
    from playwright.sync_api import sync_playwright

    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        base, pid = start_server(stack, Path(tmp), **MODEL_CACHE_ENV)
        decoder_converted(base)
        warm = {"model": DECODER, "prompt": "Hello", "max_new_tokens": 1, "temperature": 0}
        httpx.post(base + "/api/generate", json=warm, headers={"accept": "application/json"}, timeout=300)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        projector = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        projector.goto(f"{base}/?token={TOKEN}&chapter=writing")
        projector.wait_for_selector('#app[data-ready="true"][data-chapter="writing"]', timeout=120_000)
        projector.get_by_test_id("present").click()
        projector.wait_for_selector('[data-testid="presenter-status"][data-status="live"]', timeout=60_000)
        code = projector.get_by_test_id("join-code").inner_text().strip()

        # the projector alone
        before = cpu_seconds([pid])
        write_once(projector, PROMPTS[0], tokens)
        time.sleep(1.0)  # its own load of the answer, as the class's below
        alone = cpu_seconds([pid]) - before

        # the projector and its class
        phones = []
        for _ in range(pages):
            phone = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True).new_page()
            phone.goto(f"{base}/?room={code}")
            phone.wait_for_selector('[data-testid=follow-bar][data-status="live"]', timeout=60_000)
            phone.wait_for_selector('#app[data-ready="true"][data-chapter="writing"]', timeout=120_000)
            phone.evaluate(WRITTEN)
            phones.append(phone)
        sockets = Class(base, code, followers - pages)
        stack.callback(sockets.close)
        sockets.wait("joined", 60)
        time.sleep(1.0)  # the joins' counts have gone out
        before = cpu_seconds([pid])
        clicked = write_once(projector, PROMPTS[1], tokens)
        sockets.wait("loaded", 300)
        for phone in phones:
            phone.wait_for_function(f"window.__written.some(([, n]) => n >= {tokens})", timeout=300_000)
        time.sleep(1.0)
        together = cpu_seconds([pid]) - before

        shown = first_at(projector.evaluate("window.__written"), tokens)
        lags: list[float] = []
        page_lags: list[float] = []
        for phone in phones:
            seen = first_at(phone.evaluate("window.__written"), tokens)
            page_lags += [seen[i] - shown[i] for i in range(tokens) if i in seen]
        socket_lags = [s.seen[i] - shown[i] for s in sockets.phones for i in range(tokens) if i in s.seen]
        lags = page_lags + socket_lags
        if detail:  # when each token was shown, in ms after Write: the projector, then a few sockets
            print("projector", [round(shown[i] - clicked) for i in sorted(shown)])
            puts = projector.evaluate(
                """() => performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/state'))
                  .map((e) => [performance.timeOrigin + e.startTime, e.duration])"""
            )
            print("its PUTs  ", [(round(t - clicked), round(d)) for t, d in puts if t >= clicked])
            for follower in sockets.phones[:3]:
                print("a socket ", [round(follower.seen[i] - clicked) for i in sorted(follower.seen)])
        missing = followers * tokens - len(lags)
        browser.close()
    print(
        f"{followers} followers ({pages} Chromium pages, {followers - pages} sockets) × {tokens} tokens: "
        f"projector drew it → follower shows it: p50 {statistics.median(lags):.0f} ms, "
        f"p99 {percentile(lags, 0.99):.0f} ms, max {max(lags):.0f} ms "
        f"(pages: p99 {percentile(page_lags, 0.99):.0f} ms, sockets: p99 {percentile(socket_lags, 0.99):.0f} ms); "
        f"tokens never shown: {missing} (goal: p99 ≤ 1000 ms)"
    )
    print(
        f"server CPU for the writing: the projector alone {alone:.2f} s, with its class of {followers} "
        f"{together:.2f} s: {together / alone:.2f}× (goal ≤ 1.5×); first token drawn "
        f"{shown.get(0, clicked) - clicked:.0f} ms after Write; load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} CPUs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.follow", description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", choices=["views", "writing"], default="views")
    parser.add_argument("--followers", type=int, default=30)
    parser.add_argument("--pages", type=int, default=3, help="of the followers, real Chromium pages (writing)")
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--detail", action="store_true", help="when each token was shown (writing)")
    args = parser.parse_args()
    if args.what == "writing":
        writing(args.followers, args.pages, args.tokens, args.detail)
    else:
        views()


if __name__ == "__main__":
    main()
