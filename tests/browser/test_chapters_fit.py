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
from tests.browser.conftest import Watched, watched_page
from tests.browser.helpers import next_frames
from tests.browser.registry import CHAPTERS, OPENING

pytestmark = pytest.mark.browser

# the attention view's chapters: their own tests and test_layout check its table and scene
ATTENTION = {"steps", "masks"}


def step_ids(w: Watched, chapter: str) -> list[str]:
    """The chapter's steps, as its stepper lists them."""
    w.page.goto(f"{w.base}/?chapter={chapter}{OPENING.get(chapter, '')}")
    w.page.wait_for_selector(f'#app[data-ready="true"][data-chapter="{chapter}"]', timeout=60_000)
    steps = w.page.eval_on_selector_all("#step-list button", "(bs) => bs.map((b) => b.dataset.step)")
    return [str(s) for s in steps]


# the first table or chart of a step's panel: what its explanation reads its numbers from, where the
# step does not name it (step.figure, #app[data-figure]: chapters/CONTRACT.md "The first screen")
FIRST = "#chapter-panel table, #chapter-panel svg.ca-chart, #chapter-panel .caveat"


@pytest.mark.full
@pytest.mark.parametrize("size", [(1280, 720), (390, 844)])
@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c not in ATTENTION])
def test_every_step_fits_the_screen(browser: Any, server: str, chapter: str, size: tuple[int, int]) -> None:
    """Each step opened by its URL: fits() at both sizes; at 1280×720 also the explanation and its
    first table or chart inside the first screen (one page load serves both checks)."""
    with watched_page(browser, server) as w:
        w.page.set_viewport_size({"width": size[0], "height": size[1]})
        steps = step_ids(w, chapter)
        assert len(steps) >= 3, steps
        for step in steps:
            w.page.goto(f"{server}/?chapter={chapter}&step={step}{OPENING.get(chapter, '')}")
            w.page.wait_for_selector(f'#app[data-ready="true"][data-step="{step}"]', timeout=60_000)
            w.page.wait_for_selector("#chapter-text:not(:empty)", timeout=30_000)
            if size == (1280, 720):
                text, table = w.page.evaluate(
                    """(sel) => [document.getElementById('chapter-text').getBoundingClientRect().bottom,
                                document.querySelector(document.getElementById('app').dataset.figure || sel)
                                    ?.getBoundingClientRect().bottom ?? 1e9]""",
                    FIRST,
                )
                assert text <= 720 and table <= 720, (chapter, step, text, table)
            next_frames(w.page)  # the labels are placed on the frame after the answer
            fits(w)
