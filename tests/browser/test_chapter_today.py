"""Chapter today in headless Chromium: RoPE's scores, the query heads grouped by their KV head, the
sink, each as POST /api/decoder/today answers; guess first; the NumPy panel's numbers."""

from __future__ import annotations

import pytest

import tests.model.llama_fixtures  # noqa: F401 (the converted decoder is cached across runs; the server inherits it)
from tests.browser.chapters import VIEWPORTS, fits, open_at_step
from tests.browser.conftest import Watched
from tests.browser.helpers import drawn_pixels, f3, post, run_python

pytestmark = pytest.mark.browser
SENTENCE = "The cat ate its fish because it was hungry."


@pytest.mark.parametrize("size", VIEWPORTS)
def test_today(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    api = post(w.base, "/api/decoder/today", {"sentence": SENTENCE, "layer": 3, "head": 4})
    open_at_step(w, "chapter=today&step=rope", size, "rope")
    spread = max(api["shift_scores"]) - min(api["shift_scores"])
    assert w.text("today-shift-spread") == f"{spread:.4f}" == "0.0000"
    apart = max(api["distance_scores"]) - min(api["distance_scores"])
    assert w.text("today-distance-spread") == f"{apart:.4f}" and apart > 0.5
    w.page.get_by_test_id("today-guess").first.click()
    assert w.text("today-verdict").startswith("Right")
    out = run_python(w.text("numpy-code"))
    assert out["moved_spread"] < 1e-9 < out["apart_spread"] and out["gqa_bytes"] * 3 == out["mha_bytes"]
    assert drawn_pixels(w) > 500
    fits(w)

    open_at_step(w, "chapter=today&step=gqa", size, "gqa")
    for j, group in enumerate(api["groups"]):  # the head picker: query heads grouped by their KV head
        assert w.page.get_by_test_id(f"today-group-{j}").locator("button").all_inner_texts() == [f"q{h}" for h in group]
    assert w.text("today-kv-head") == "4 → 1"
    assert w.page.get_by_test_id("today-head-4").get_attribute("aria-pressed") == "true"
    assert w.text("today-bytes") == "46080 B" and w.text("today-bytes-mha") == "138240 B"
    fits(w)

    open_at_step(w, "chapter=today&step=sink", size, "sink")
    assert w.text("today-sink") == f3(api["sink"]) and 0.5 < api["sink"] < 0.8
    fits(w)


def test_today_head_picker_asks_the_server(watched: Watched) -> None:
    w = watched
    open_at_step(w, "chapter=today&step=gqa&head=4", (1280, 720), "gqa")
    w.page.get_by_test_id("today-head-7").click()
    w.page.wait_for_selector('[data-testid=today-head-7][aria-pressed="true"]', timeout=60_000)
    assert w.text("today-kv-head") == "7 → 2"
