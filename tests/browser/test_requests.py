"""What the page asks the server for a new sentence: how many requests, in which format, how many
bytes, so that the page's requests cannot grow back (issue 20: they once were two float64 JSON
answers of every stage, 6.9 MB gzipped for 300 tokens, and an overview refused above 64 tokens);
and the causal mask of a sentence too long to compare, asked for only when the page shows it."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.browser.conftest import Watched

FRAME = "application/x-attention-frame"
SENTENCE = " ".join(["the animal did not cross the street because it was too tired"] * 9)  # 110 tokens


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


def test_a_new_sentence_costs_two_requests_of_bounded_size(watched: Watched) -> None:
    w = watched
    w.goto()
    w.wait_ready()
    sent, events = sent_for(w, SENTENCE)
    n = 110
    views = [r for r in sent if r["path"] == "attention"]
    overviews = [r for r in sent if r["path"] == "overview"]
    # besides: the model's status, and the model picker's list (GET /api/models, once per page)
    others = [r for r in sent if r["path"] not in ("attention", "overview", "model", "models")]
    assert others == [], others
    assert all(r["status"] == 200 for r in sent), sent

    # the view: one frame (binary float64, never compressed) of the stages under the mask shown,
    # but the scaled scores, which the page divides out of the scores itself (static/js/model.js
    # scaledFrom); 110 rows are too many to compare the masks side by side, so the causal mask
    # waits until the page switches to it (the next test)
    assert len(views) == 1, views
    (view,) = views
    assert FRAME in view["accept"] and view["type"] == FRAME and view["encoding"] is None, view
    assert view["body"]["mask"] == "full", view
    assert view["body"]["stages"] == ["q", "k", "v", "scores", "weights", "output"], view
    d_k = 32
    every = 2 * n * n + 4 * n * d_k  # scores, weights; q, k, v, output
    header = 16_000  # tokens, words, spans and the array layout
    assert view["bytes"] <= 8 * every + header

    # the overview: one summary of every head (not every weight), compressed JSON
    assert len(overviews) == 1, overviews
    (ov,) = overviews
    assert ov["type"] == "application/json" and ov["encoding"] in ("gzip", "br", "zstd")
    assert ov["bytes"] <= 120_000, ov  # 72 heads × 32 × 32 blocks, in thousandths, compressed

    # the overview is asked for once the view's frame is in: asked together, its forward through
    # every layer could take the sentence's turn and the view (one layer) waited behind it
    assert events.count("read attention") == 1 and events.count("sent overview") == 1, events
    assert events.index("sent overview") > events.index("read attention"), events

    # nothing else on the way but the model's status (polled while its weights load), a few bytes each
    assert all(r["bytes"] < 2_000 for r in sent if r["path"] in ("model", "models"))
    assert len([r for r in sent if r["path"] == "models"]) <= 1


def test_the_causal_mask_of_a_long_sentence_comes_when_it_is_shown(watched: Watched) -> None:
    w = watched
    w.goto()
    w.wait_ready()
    sent_for(w, SENTENCE)
    compare = w.page.locator("#compare-tables").inner_text()
    assert "110 rows are too many to compare side by side" in compare, compare
    assert not w.page.get_by_test_id("mask-causal").is_disabled()
    w.page.get_by_test_id("step-softmax").click()
    w.page.get_by_test_id("row-30").click()
    w.wait_ready(step="softmax", mask="full", focus=30)

    asked: list[dict[str, Any]] = []
    w.page.on("request", lambda r: asked.append(json.loads(r.post_data)) if r.url.endswith("/api/attention") else None)
    w.page.get_by_test_id("mask-causal").click()
    w.wait_ready(step="softmax", mask="causal", focus=30)
    # one frame, of the stages the full answer cannot give: the causal weights and output
    got = [(a["mask"], a.get("stages"), a["layer"], a["head"]) for a in asked]
    assert got == [("causal", ["weights", "output"], 0, 0)], got
    body = {"sentence": SENTENCE, "layer": 0, "head": 0, "mask": "causal"}
    served = httpx.post(w.base + "/api/attention", json=body, timeout=60).json()
    shown = [w.text(f"cell-30-{j}") for j in range(40)]
    assert shown == [f"{x:.3f}" for x in served["weights"][30][:40]], (shown, served["weights"][30][:40])
    assert w.text("cell-30-31") == "0.000"  # a later key: hidden by the causal mask

    # back and forth: both masks are there now, nothing more is asked
    w.page.get_by_test_id("mask-full").click()
    w.wait_ready(mask="full")
    w.page.get_by_test_id("mask-causal").click()
    w.wait_ready(mask="causal")
    assert len(asked) == 1, asked
