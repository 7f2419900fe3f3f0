"""A first visit, measured by Chromium's own network log: at most 500 KB on the wire and 12
requests until the page has drawn its first computed view (compressed text, a bundled page)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import Watched

pytestmark = pytest.mark.browser

MAX_BYTES = 500 * 1024
MAX_REQUESTS = 12


def test_first_visit_is_light(watched: Watched) -> None:
    page = watched.page
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    sizes: dict[str, float] = {}
    urls: dict[str, str] = {}
    cdp.on("Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"]))
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    watched.goto("")
    page.wait_for_load_state("networkidle")
    total = sum(sizes.values())
    listing = "\n".join(f"{sizes.get(k, 0):>9.0f}  {u}" for k, u in urls.items())
    print(f"first visit: {len(urls)} requests, {total / 1024:.0f} KB on the wire\n{listing}")
    assert len(urls) <= MAX_REQUESTS, listing
    assert total <= MAX_BYTES, listing
    assert any("/static/dist/app-" in u for u in urls.values()), "the page should be served as its bundle"


def test_text_is_compressed_and_frames_are_not(watched: Watched) -> None:
    page = watched.page
    watched.goto("")
    got: dict[str, Any] = page.evaluate(
        """async () => {
          const js = [...document.scripts].find((s) => s.src.includes('/static/dist/'));
          const head = async (url, init) => { const r = await fetch(url, init); await r.arrayBuffer();
            return r.headers.get('content-encoding'); };
          const body = JSON.stringify({ q: [[1, 0], [0, 1]], k: [[1, 0], [0, 1]], v: [[1, 0], [0, 1]] });
          return {
            js: await head(js.src),
            json: await head('/api/examples'),
            frame: await head('/api/attention', { method: 'POST', body,
              headers: { 'content-type': 'application/json', accept: 'application/x-attention-frame' } }),
          };
        }"""
    )
    # Chromium offers "gzip, deflate, br, zstd": zstd is the server's choice then (app.web.middleware)
    assert got["js"] == "zstd", got
    assert got["json"] == "zstd", got
    assert got["frame"] is None, got
