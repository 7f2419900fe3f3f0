"""Every step of every lesson chapter (but the two attention ones), on a projector (1280×720) and a
phone (390×844): no 3D label covers another, nothing is wider than the screen, and the explanation,
the 3D view and the panel do not overlap; at 1280×720 the step's explanation and the first table or
chart of its panel (the one its text reads) end inside the first screen.

`make test-all` only (marked full): test_layout's walks of every step of every chapter, at the same
two sizes, make the same checks at each step (chapters.fits() and the first-screen check), stepping
by the step list rather than opening each step by its URL; chapters' own tests open steps by URL."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.chapters import fits
from tests.browser.conftest import watched_page
from tests.browser.helpers import next_frames

pytestmark = pytest.mark.browser

STEPS = {
    "rnn": ["chain", "fade", "direct"],
    "projections": ["x", "q", "k", "v", "all"],
    "scaling": ["spread", "unscaled", "scaled"],
    "positions": ["plain", "sinusoid", "model"],
    "heads": ["heads", "concat", "wo", "model"],
    "block": ["input", "attention", "add", "norm", "ffn", "output", "order"],
    "mistakes": ["no-scale", "softmax-columns", "mask-after-softmax", "caveat"],
}


# the first table or chart of a step's panel: what its explanation reads its numbers from
FIRST = "#chapter-panel table, #chapter-panel svg.ca-chart, #chapter-panel .caveat"


@pytest.mark.full
@pytest.mark.parametrize("size", [(1280, 720), (390, 844)])
@pytest.mark.parametrize("chapter", list(STEPS))
def test_every_step_fits_the_screen(browser: Any, server: str, chapter: str, size: tuple[int, int]) -> None:
    """Each step opened by its URL: fits() at both sizes; at 1280×720 also the explanation and its
    first table or chart inside the first screen (one page load serves both checks)."""
    with watched_page(browser, server) as w:
        w.page.set_viewport_size({"width": size[0], "height": size[1]})
        for step in STEPS[chapter]:
            w.page.goto(f"{server}/?chapter={chapter}&step={step}")
            w.page.wait_for_selector(f'#app[data-ready="true"][data-step="{step}"]', timeout=60_000)
            w.page.wait_for_selector("#chapter-text:not(:empty)", timeout=30_000)
            if size == (1280, 720):
                text, table = w.page.evaluate(
                    """(sel) => [document.getElementById('chapter-text').getBoundingClientRect().bottom,
                                document.querySelector(sel)?.getBoundingClientRect().bottom ?? 1e9]""",
                    FIRST,
                )
                assert text <= 720 and table <= 720, (chapter, step, text, table)
            next_frames(w.page)  # the labels are placed on the frame after the answer
            fits(w)
