"""From the presenter's change to a follower's page showing it: 3 Chromium follower pages, 20 changes.

    .venv/bin/python -m bench.follow          (needs Debian's chromium, as the browser tests)

A real server process (as `attention3d` runs it); the presenter PUTs 20 view states (step and focus
of the cat example, 0.5 s apart); each follower page records (Date.now(), the same clock as
this process's time.time()) when it has applied and drawn each one (hub.applyViewState resolved:
the page has asked the server for the new view's numbers and drawn them). Reported: p50, p99, max.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from bench.model import MODEL_CACHE_ENV, decoder_converted
from bench.rooms import TOKEN, request, start_server

CHROMIUM = "/usr/bin/chromium"
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


def main() -> None:
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
    latencies.sort()
    lost = 3 * len(sent) - len(latencies)
    p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
    print(
        f"3 follower pages × {len(sent)} changes: PUT sent → page drawn: p50 {statistics.median(latencies):.0f} ms, "
        f"p99 {p99:.0f} ms, max {latencies[-1]:.0f} ms; not applied: {lost}"
    )
    print(json.dumps({"latencies_ms": [round(x) for x in latencies]}))


if __name__ == "__main__":
    main()
