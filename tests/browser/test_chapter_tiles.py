"""Chapter tiles in headless Chromium: every step of "the cat ate its fish" as POST /api/lesson/tiles
computes it (the block's cells, the running m, l, o, the rescale revealed after the guess, the finished
row beside the plain one, the memory counter), the block moved along the keys, b chosen, a typed
sentence through all-MiniLM-L6-v2, the NumPy panel run in a plain Python, a bad block refused; every
step walked at 1280×720 (first screen) and on a phone (390×844), and on the projector."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.chapters import ANIMAL, fits, num, open_at_step, param, wait
from tests.browser.conftest import Watched, watched_page
from tests.browser.helpers import chapter_violations, close, drawn_pixels, f3, next_frames, post, run_python
from tests.browser.test_layout import FIRST_SCREEN, PHONE_CHECK, _walk
from tests.browser.test_projector import projector, walk_chapter  # noqa: F401 (projector: a fixture)
from tests.browser.test_withhold import shown_when_withheld

pytestmark = pytest.mark.browser

STEPS = ["table", "blocks", "read", "rescale", "finish", "memory"]
ITS, FISH = 3, 4
SHOTS = os.environ.get("TILES_SHOTS")  # a folder: the walks leave their screenshots there, to be looked at


def shot(w: Watched, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        w.page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def example(w: Watched, block: int = 2, mask: str = "full") -> Any:
    return post(w.base, "/api/lesson/tiles", {"example": "the-cat-ate-its-fish", "block": block, "mask": mask})


def test_every_step_of_the_example(watched: Watched) -> None:
    w = watched
    api = example(w)
    open_at_step(w, "chapter=tiles", (1280, 720), "table")
    # the plain way: every score at once, as the server computed them
    for i in range(5):
        for c in range(5):
            block = next(s for s in api["steps"] if s["start"] <= c < s["stop"])
            assert w.text(f"tiles-s-{i}-{c}") == f3(block["scores"][i][c - block["start"]])
    assert w.text("tiles-table-cells") == "25" and w.text("tiles-tile") == "10" and w.text("tiles-b") == "2"
    assert drawn_pixels(w) > 500
    shot(w, "tiles-table")

    # the blocks: only the block's 10 cells have numbers, the other 15 never exist; the block moves along
    w.page.get_by_test_id("step-blocks").click()
    wait(w, "blocks")
    assert "dropped" not in w.text("chapter-text")  # the question's answer is not in the words
    assert w.page.locator("[data-testid=tiles-table] td.tl-never").count() == 15
    assert w.text("tiles-at") == "block 1 of 3: “the”, “cat”"
    assert w.text("tiles-s-3-1") == "4.243" and w.page.get_by_test_id("tiles-s-3-2").count() == 0
    w.page.get_by_test_id("tiles-next").click()
    expect(w.page.get_by_test_id("tiles-at")).to_have_text("block 2 of 3: “ate”, “its”")
    assert param(w, "at") == "blocks:2"
    for i in range(5):
        assert w.text(f"tiles-s-{i}-2") == f3(api["steps"][1]["scores"][i][0])
        assert w.text(f"tiles-m-{i}") == f3(api["steps"][1]["m"][i]) and w.text(f"tiles-l-{i}") == f3(
            api["steps"][1]["l"][i]
        )
    w.page.get_by_test_id("tiles-next").click()
    expect(w.page.get_by_test_id("tiles-at")).to_have_text("block 3 of 3: “fish”")  # the short last block
    assert w.page.get_by_test_id("tiles-next").is_disabled()
    assert w.page.locator("[data-testid=tiles-table] td.tl-never").count() == 20
    shot(w, "tiles-blocks")

    # read: "its" after block 1, worked out line by line
    w.page.get_by_test_id("step-read").click()
    wait(w, "read")
    assert w.text("tiles-at") == "block 1 of 3: “the”, “cat”"  # the step's own block, not the one moved to
    first = api["steps"][0]
    assert (
        (w.text("tiles-m-3"), w.text("tiles-l-3")) == (f3(first["m"][ITS]), f3(first["l"][ITS])) == ("4.243", "1.014")
    )
    assert w.text("tiles-o-3") == "[1.000, 0.000]"
    assert w.text("tiles-arith-m") == "m = max(m_old, 4.243) = max(−∞, 4.243) = 4.243"
    assert w.text("tiles-arith-alpha") == "α = e^(m_old − m) = e^(−∞ − 4.243) = 0.000"
    assert w.text("tiles-arith-l").endswith(f"= {f3(first['l'][ITS])}")
    assert w.text("tiles-m") == "4.243"
    assert "overflow" not in w.text("chapter-text")  # the question's answer is not in the words
    w.page.get_by_test_id("tiles-ask-0").click()
    assert w.text("tiles-ask-result").startswith("Right!") and "(m = 4.243 for “its” after block 1)" in w.text(
        "tiles-ask-result"
    )
    shot(w, "tiles-read")

    # rescale: "fish" meets "ate" (3.182 > 0) in block 2; l and o only after the guess
    w.page.get_by_test_id("step-rescale").click()
    wait(w, "rescale")
    second = api["steps"][1]
    assert w.page.locator("#chapter-panel tr.tl-hot th").inner_text() == "fish"
    assert w.text("tiles-at") == "block 2 of 3: “ate”, “its”"
    assert w.text("tiles-arith-m") == "m = max(m_old, 3.182) = max(0.000, 3.182) = 3.182"
    assert w.text("tiles-l-4") == "?" and w.text("tiles-o-4") == "?"
    assert w.page.get_by_test_id("tiles-arith-alpha").count() == 0
    assert "3.182" in w.text("chapter-text") and "What must happen to them now?" in w.text("chapter-text")
    shot(w, "tiles-rescale-before")
    w.page.get_by_test_id("tiles-ask-0").click()  # a wrong guess: the answer and why
    assert w.text("tiles-ask-result").startswith("Not quite")
    assert "e^(0.000 − 3.182) = 0.042" in w.text("tiles-ask-result")
    assert w.text("tiles-l-4") == f3(second["l"][FISH]) == "1.125"
    assert w.text("tiles-o-4") == "[0.054, 0.500]"
    assert w.text("tiles-arith-alpha") == f"α = e^(m_old − m) = e^(0.000 − 3.182) = {f3(second['alpha'][FISH])}"
    assert w.text("tiles-arith-l") == "l = α·l_old + Σ e^(s − m) = 0.042 × 2.000 + (1.000 + 0.042) = 1.125"
    shot(w, "tiles-rescale")

    # finish: the finished row is the plain softmax row; o / l is the plain output
    w.page.get_by_test_id("step-finish").click()
    wait(w, "finish")
    assert "another order" not in w.text("chapter-text")
    w.page.get_by_test_id("tiles-ask-1").click()
    assert w.text("tiles-ask-result").startswith("Not quite: it is “the same terms, added in another order”")
    plain = [0.013, 0.895, 0.013, 0.026, 0.053]
    for c in range(5):
        assert w.text(f"tiles-tiles-w-{c}") == w.text(f"tiles-plain-w-{c}") == f"{plain[c]:.3f}"
    assert w.text("tiles-tiles-out") == w.text("tiles-plain-out") == "[0.903, 0.059]"
    gap = w.text("tiles-gap-number")
    assert gap == "0" or float(gap.replace("\u2212", "-")) < 1e-15
    shot(w, "tiles-finish")

    # memory: 10 instead of 25; 4,096 tokens in blocks of 128
    w.page.get_by_test_id("step-memory").click()
    wait(w, "memory")
    assert (
        w.text("tiles-here-tile") == "10"
        and w.text("tiles-here-table") == "25"
        and w.text("tiles-here-running") == "20"
    )
    assert w.text("tiles-long-tile") == "524,288 (2 MiB)" and w.text("tiles-long-table") == "16,777,216 (64 MiB)"
    w.page.get_by_test_id("tiles-ask-0").click()
    assert w.text("tiles-ask-result").startswith("Right!") and "n / b = 32 times fewer" in w.text("tiles-ask-result")
    shot(w, "tiles-memory")


def test_the_numpy_panel_is_the_same_arithmetic(watched: Watched) -> None:
    w = watched
    api = example(w, block=2, mask="causal")
    open_at_step(w, "chapter=tiles&step=read&mask=causal", (1280, 720), "read")
    out = run_python(w.text("numpy-code"))
    assert close(out["output"], api["output"], 1e-12)
    for mine, theirs in zip(out["steps"], api["steps"], strict=True):
        assert close(mine["m"], theirs["m"], 1e-12) and close(mine["l"], theirs["l"], 1e-12)
    assert out["largest_difference"] < 1e-15
    assert out["row"] == out["output"][ITS]


def test_withheld_running_numbers_leave_the_3d_view_at_once(watched: Watched) -> None:
    """A class question withholds the weights: the running m, l, o beside the focused row leave the 3D
    view in the redraw's own task, before the page paints."""
    w = watched
    open_at_step(w, "chapter=tiles&step=read", (1280, 720), "read")
    next_frames(w.page)
    assert w.page.locator(".tl-running").count() == 1  # "its", m, l and o beside its row
    assert shown_when_withheld(w, "quiz", ".tl-running", "#chapter-text", "hidden") == []


def test_block_size_and_mask_chosen_by_the_learner(watched: Watched) -> None:
    w = watched
    open_at_step(w, "chapter=tiles&step=blocks", (1280, 720), "blocks")
    w.page.get_by_test_id("tiles-block").select_option("1")
    expect(w.page.get_by_test_id("tiles-at")).to_have_text("block 1 of 5: “the”")
    assert param(w, "block") == "1" and w.text("tiles-tile") == "5"
    options = w.page.eval_on_selector_all("[data-testid=tiles-block] option", "(os) => os.map((o) => o.value)")
    assert options == ["1", "2", "4", "5"]
    w.page.get_by_test_id("tiles-mask").select_option("causal")
    w.page.wait_for_function("() => new URLSearchParams(location.search).get('mask') === 'causal'")
    wait(w, "blocks")
    api = example(w, block=1, mask="causal")
    w.page.get_by_test_id("tiles-next").click()
    expect(w.page.get_by_test_id("tiles-at")).to_have_text("block 2 of 5: “cat”")
    assert w.text("tiles-s-0-1") == "−∞"  # "the" does not see "cat" under the causal mask
    assert w.text("tiles-l-1") == f3(api["steps"][1]["l"][1]) == "2.000"


def test_a_typed_sentence_through_the_model(watched: Watched) -> None:
    w = watched
    open_at_step(w, "chapter=tiles&step=read", (1280, 720), "read")
    box = w.page.get_by_test_id("tiles-sentence")
    box.fill(ANIMAL)
    box.press("Enter")
    w.page.wait_for_selector("[data-testid=tiles-layer]", timeout=60_000)
    wait(w, "read")
    assert param(w, "text") == ANIMAL and param(w, "block") == "4"
    api = post(w.base, "/api/lesson/tiles", {"sentence": ANIMAL, "layer": 3, "head": 1, "block": 4})
    ref = post(w.base, "/api/attention", {"sentence": ANIMAL, "layer": 3, "head": 1})
    it = api["tokens"].index("it")
    assert w.page.locator("#chapter-panel tr.tl-hot th").inner_text() == "it"
    assert w.text(f"tiles-m-{it}") == f3(api["steps"][0]["m"][it])
    assert w.text("tiles-at") == "block 1 of 4: “[CLS]” … “didn”"
    out = run_python(w.text("numpy-code"))
    assert close(out["output"], ref["output"], 1e-12)
    w.page.get_by_test_id("step-finish").click()
    wait(w, "finish")
    gap = num(w.text("tiles-gap-number")) if w.text("tiles-gap-number") != "0" else 0.0
    assert gap < 1e-12
    assert w.text(f"tiles-tiles-w-{it}") == f3(ref["weights"][it][it])
    shot(w, "tiles-sentence-finish")
    # back to the example
    w.page.get_by_test_id("tiles-example").click()
    expect(w.page.get_by_test_id("tiles-tile")).to_have_text("10")
    assert w.page.evaluate("new URLSearchParams(location.search).get('text')") == ""


def test_a_block_past_n_is_refused_by_the_server(watched: Watched) -> None:
    w = watched
    w.expect_console_error("422")
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(w.base + "/?chapter=tiles&block=9")
    w.page.wait_for_selector("[data-testid=chapter-error]:not([hidden])", timeout=30_000)
    assert "block" in w.text("chapter-error") and "1 … 5" in w.text("chapter-error")


@pytest.mark.full  # test_layout's walk of every chapter does the same for this one
def test_every_step_whole_on_the_first_screen_at_1280x720(browser: Any, server: str) -> None:
    """Each step reached by the step list: the explanation and what it speaks of on the first screen,
    nothing over anything, no sideways scroll (test_layout's walk)."""
    with watched_page(browser, server) as w:
        w.page.set_viewport_size({"width": 1280, "height": 720})
        seen = _walk(w, "tiles", FIRST_SCREEN)
        assert list(seen) == STEPS
        bad = {s: v for s, v in seen.items() if v["scrolled"] or v["explain"] or v["off"] or not v["figures"]}
        assert not bad, bad


def test_every_step_on_a_phone(browser: Any, server: str) -> None:
    with watched_page(browser, server, viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True) as w:
        seen = _walk(w, "tiles", PHONE_CHECK)
        for step in ("read", "finish"):
            w.page.get_by_test_id(f"step-{step}").click()
            wait(w, step)
            next_frames(w.page)
            shot(w, f"tiles-phone-{step}")
            fits(w)
    bad = {s: v for s, v in seen.items() if v["overlaps"] or v["cut"] or v["width"] > 390}
    assert not bad, bad


@pytest.mark.full  # test_projector's walk of every chapter does the same for this one
def test_every_step_whole_and_large_on_the_projector(projector: Watched) -> None:  # noqa: F811
    problems = walk_chapter(projector, "tiles", "")
    shot(projector, "tiles-projector-last")
    assert not problems, "\n".join(problems)


def test_a_typed_sentence_on_the_projector(projector: Watched) -> None:  # noqa: F811
    problems = walk_chapter(projector, "tiles", f"&text={ANIMAL.replace(' ', '+')}&block=4")
    shot(projector, "tiles-projector-sentence-last")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("step", ["blocks", "rescale", "finish", "memory"])
def test_no_accessibility_violations(browser: Any, server: str, step: str) -> None:
    """axe-core at WCAG 2.x A and AA (the grey cells that never exist, the pickers, the tables)."""
    assert chapter_violations(browser, server, f"?chapter=tiles&step={step}") == []
