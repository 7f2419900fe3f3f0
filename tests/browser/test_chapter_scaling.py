"""Chapter scaling in headless Chromium: the spread of q·k and the softmax with and without ÷√d_k as
the API measures them, the d_k control and its limit."""

from __future__ import annotations

import math

import pytest
from playwright.sync_api import expect

from tests.browser.chapters import VIEWPORTS, f4, fits, open_at_step, param
from tests.browser.conftest import Watched
from tests.browser.helpers import close, drawn_pixels, f3, next_frames, post, run_python
from tests.browser.test_withhold import shown_when_withheld

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("size", VIEWPORTS)
def test_scaling(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    api = post(w.base, "/api/scaling", {"d_k": 256})
    open_at_step(w, "chapter=scaling&step=unscaled&dk=256", size, "unscaled")
    assert w.text("scaling-d-k") == "256" and w.text("scaling-sqrt") == "16.0000"
    assert w.text("scaling-std") == f4(api["std"])
    assert w.text("scaling-max-unscaled") == f4(api["max_unscaled"])
    assert w.text("scaling-max-scaled") == f4(api["max_scaled"])
    assert w.text("scaling-entropy-unscaled") == f4(api["entropy_unscaled"])
    assert w.text("scaling-entropy-scaled") == f4(api["entropy_scaled"])
    for j in range(8):
        assert w.text(f"scaling-unscaled-{j}") == f3(api["unscaled"][j])
        assert w.text(f"scaling-scaled-{j}") == f3(api["scaled"][j])
    out = run_python(w.text("numpy-code"))
    assert close(out["std"], api["std"], 1e-9)  # the same draws; the sum may round differently
    for k in ("max_unscaled", "max_scaled", "entropy_unscaled", "entropy_scaled"):
        assert close(out[k], api[k], 1e-12), k
    assert w.page.get_by_test_id("scaling-chart").count() == 1
    assert drawn_pixels(w) > 500
    fits(w)


def test_scaling_control_and_its_limit(watched: Watched) -> None:
    w = watched
    open_at_step(w, "chapter=scaling&step=spread&dk=64", (1280, 720), "spread")
    box = w.page.get_by_test_id("scaling-dk")
    box.fill("1000")
    box.press("Enter")
    expect(w.page.get_by_test_id("scaling-d-k")).to_have_text("1000", timeout=30_000)
    api = post(w.base, "/api/scaling", {"d_k": 1000})
    assert param(w, "dk") == "1000" and w.text("scaling-std") == f4(api["std"])
    assert abs(api["std"] / math.sqrt(1000) - 1) < 0.05
    # the box itself refuses 2000 (min 2, max 1024): nothing is sent, the page keeps d_k = 1000
    box.fill("2000")
    box.press("Enter")
    assert param(w, "dk") == "1000" and w.text("scaling-d-k") == "1000"
    # a URL outside 2 … 1024: the server's 422 names d_k and the limit, shown on the page
    w.expect_console_error("422")
    w.page.goto(w.base + "/?chapter=scaling&step=spread&dk=2000")
    w.page.wait_for_selector("[data-testid=chapter-error]:not([hidden])", timeout=20_000)
    assert "d_k" in w.text("chapter-error") and "1024" in w.text("chapter-error")


def test_withheld_weights_leave_the_grids_titles_at_once(watched: Watched) -> None:
    """The grids' titles carry the largest weight ("softmax(q·k): largest 0.945"). A class question
    withholds the weights: the grids are drawn again with the scores; by the end of that task (before
    the page paints) the old titles are gone and the new ones in."""
    w = watched
    open_at_step(w, "chapter=scaling&step=scaled&dk=256", (1280, 720), "scaled")
    next_frames(w.page)
    titles = w.page.locator(".ca-grid-title").all_inner_texts()
    assert len(titles) == 2 and all("largest" in t for t in titles)
    shown = shown_when_withheld(w, "quiz", ".ca-grid-title", "#chapter-text", "hidden")
    assert len(shown) == 2 and not any("largest" in t for t in shown)  # the scores' two grids only
