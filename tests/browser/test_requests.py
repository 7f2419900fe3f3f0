"""What the page asks the server for a new sentence: how many requests, in which format, how many
bytes, so that the page's requests cannot grow back (issue 20: they once were two float64 JSON
answers of every stage, 6.9 MB gzipped for 300 tokens, and an overview refused above 64 tokens)."""

from __future__ import annotations

import json
from typing import Any

from tests.browser.conftest import Watched

FRAME = "application/x-attention-frame"
SENTENCE = " ".join(["the animal did not cross the street because it was too tired"] * 9)  # 111 tokens


def sent_for(w: Watched, text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The API requests the page sends from Enter until the view and the overview are drawn, with
    what came back (status, type, encoding, bytes on the wire); and the order in which requests left
    and their answers were read whole ("sent PATH", "read PATH")."""
    seen: list[dict[str, Any]] = []
    events: list[str] = []

    def path_of(request: Any) -> str | None:
        return request.url.split("/api/", 1)[1].split("?")[0] if "/api/" in request.url else None

    def sent(request: Any) -> None:
        if path := path_of(request):
            events.append(f"sent {path}")

    def read(request: Any) -> None:
        if path := path_of(request):
            events.append(f"read {path}")

    def record(response: Any) -> None:
        request = response.request
        if "/api/" not in request.url:
            return
        headers = response.headers
        body = request.post_data
        seen.append(
            {
                "path": request.url.split("/api/", 1)[1].split("?")[0],
                "method": request.method,
                "body": json.loads(body) if body else None,
                "accept": request.headers.get("accept", ""),
                "status": response.status,
                "type": headers.get("content-type", "").split(";")[0],
                "encoding": headers.get("content-encoding"),
                "bytes": int(headers.get("content-length") or len(response.body())),
            }
        )

    w.page.on("response", record)
    w.page.on("request", sent)
    w.page.on("requestfinished", read)
    w.page.get_by_test_id("sentence-input").fill(text)
    w.page.get_by_test_id("sentence-input").press("Enter")
    w.page.wait_for_selector('#app[data-ready="true"][data-mode="sentence"]', timeout=60_000)  # the model loads
    w.page.wait_for_selector('#overview-grid[data-count="72"]', timeout=60_000)
    w.page.wait_for_load_state("networkidle")
    w.page.remove_listener("response", record)
    w.page.remove_listener("request", sent)
    w.page.remove_listener("requestfinished", read)
    return seen, events


def test_a_new_sentence_costs_three_requests_of_bounded_size(watched: Watched) -> None:
    w = watched
    w.goto()
    w.wait_ready()
    sent, events = sent_for(w, SENTENCE)
    n = 111
    views = [r for r in sent if r["path"] == "attention"]
    overviews = [r for r in sent if r["path"] == "overview"]
    # besides: the model's status, and the model picker's list (GET /api/models, once per page)
    others = [r for r in sent if r["path"] not in ("attention", "overview", "model", "models")]
    assert others == [], others
    assert all(r["status"] == 200 for r in sent), sent

    # the view: frames (binary float64, never compressed), every stage under one mask and under the
    # other only its weights and output (the page hides the full mask's scaled cells for its masked);
    # the model runs once for both (tests/model/test_overview.py)
    assert len(views) == 2, views
    assert all(FRAME in r["accept"] and r["type"] == FRAME and r["encoding"] is None for r in views), views
    stages = sorted(tuple(r["body"].get("stages") or ["all"]) for r in views)
    assert stages == [("all",), ("weights", "output")], stages
    d_k = 32
    every = 3 * n * n + 4 * n * d_k  # scores, scaled (= masked under the full mask), weights; q, k, v, output
    causal = n * n + n * d_k  # weights, output
    header = 16_000  # tokens, words, spans and the array layout
    assert sum(r["bytes"] for r in views) <= 8 * (every + causal) + 2 * header

    # the overview: one summary of every head (not every weight), compressed JSON
    assert len(overviews) == 1, overviews
    (ov,) = overviews
    assert ov["type"] == "application/json" and ov["encoding"] in ("gzip", "br", "zstd")
    assert ov["bytes"] <= 120_000, ov  # 72 heads × 32 × 32 blocks, in thousandths, compressed

    # the overview is asked for once the view's frames are in: asked together, its forward through
    # every layer could take the sentence's turn and the view (one layer) waited behind it
    assert events.count("read attention") == 2 and events.count("sent overview") == 1, events
    last_frame = max(i for i, e in enumerate(events) if e == "read attention")
    assert events.index("sent overview") > last_frame, events

    # nothing else on the way but the model's status (polled while its weights load), a few bytes each
    assert all(r["bytes"] < 2_000 for r in sent if r["path"] in ("model", "models"))
    assert len([r for r in sent if r["path"] == "models"]) <= 1
