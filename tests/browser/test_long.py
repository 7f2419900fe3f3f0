"""A long sentence on the page (issue 42): SmolLM2 reading 4,079 tokens in real Chromium against a real
server. The table opens on the whole table in blocks, the focused query's own row under its block; its
numbers are the API's summary and rows (POST /api/attention, detail summary). Opening a block of keys,
moving the focus far and the words around it, the 3D view's window with its blocks and links to the
strongest keys only; the same at 1920 × 1080, on a phone and in the projector view; a sentence over the
limit is refused with the limit in tokens."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched, watched_page
from tests.browser.helpers import fewest_labels, labels_shown, next_frames, post, watch_labels

pytestmark = pytest.mark.browser

DECODER = "smollm2-135m"


def text(sentences: int) -> str:
    """Numbered sentences, none like another: 237 of them are 4,079 tokens for SmolLM2, 238 are 4,097."""
    return " ".join(f"Sentence {i} says that the cat ate its fish on day {i * 7 % 31}." for i in range(sentences))


LONG, N = text(237), 4079
LAYER, HEAD = 2, 4
SHOTS = Path(tempfile.gettempdir()) / "attention3d-long"  # the screenshots, to look at (docs/ has chosen ones)


def _api(base: str, **body: Any) -> Any:
    return post(base, "/api/attention", {"sentence": LONG, "model": DECODER, "layer": LAYER, "head": HEAD, **body}, 180)


def _number(s: str) -> float:
    return float(s.strip().replace("\u2212", "-"))


def _run(w: Watched, query: str = "") -> None:
    """The long sentence from a link, on layer LAYER, head HEAD, at the softmax step (typed and run with
    Enter, a first sentence opens on layer 0: bench/long.py times that)."""
    w.page.goto(f"{w.base}/?model={DECODER}&layer={LAYER}&head={HEAD}&step=softmax&sentence={quote(LONG)}{query}")
    w.page.wait_for_selector(f'#app[data-ready="true"][data-mode="sentence"][data-layer="{LAYER}"]', timeout=120_000)
    w.page.wait_for_selector('[data-testid="lod-caption"]', timeout=60_000, state="attached")


def test_a_long_sentence_opens_on_its_whole_table_in_blocks(browser: Any, server: str) -> None:
    with watched_page(browser, server, viewport={"width": 1280, "height": 720}) as w:
        _run(w)
        page = w.page
        summary = _api(server, detail="summary", rows=[1], stages=["weights", "block_mean", "block_peak"])
        edges = summary["edges"]
        assert len(summary["tokens"]) == N and summary["block"] == 255 and len(edges) == 17
        # the whole table: 16 × 16 blocks of 255 tokens (the last one 254), the focused query's own row under its first
        expect(page.get_by_test_id("lod-caption")).to_contain_text(f"The whole table of {N} tokens, in blocks of 255")
        assert page.locator('#matrix [data-testid^="blockcol-"]').count() == 16
        assert page.locator('#matrix [data-testid^="block-"]').count() == 16 * 16
        for a, c in ((0, 0), (5, 2), (15, 15), (15, 0)):
            cell = page.get_by_test_id(f"block-{a}-{c}")
            title = cell.get_attribute("title") or ""
            got = re.search(r"mean share ([\d.]+), largest weight ([\d.]+)", title)
            assert got, title
            assert float(got.group(1)) == pytest.approx(summary["block_mean"][a][c], abs=5e-4)
            assert float(got.group(2)) == pytest.approx(summary["block_peak"][a][c], abs=5e-4)
        hidden = page.get_by_test_id("block-3-9")  # every key after every query: hidden, no number
        assert "hidden by the causal mask" in (hidden.get_attribute("title") or "") and hidden.inner_text() == ""
        row = summary["weights"][0]  # the focused query (token 1), every key
        for c in range(16):
            share = sum(row[edges[c] : edges[c + 1]])
            shown = page.get_by_test_id(f"blockfocus-{c}").inner_text()
            want = "" if edges[c] > 1 else "·" if share < 0.005 else f"{share:.2f}"  # later keys: hidden, no number
            assert shown == want, (c, shown, share)
        expect(page.get_by_test_id("blockrow-focus")).to_contain_text(summary["tokens"][1])
        # the 3D view: the window of 16 words, the other keys in blocks, links to the strongest keys only
        note = w.text("scene-note")
        assert f"shows 16 of the {N} words (1–16" in note
        assert "links go to its 2 strongest keys only" in note  # token 1 sees two keys
        scene = page.get_by_test_id("scene")
        widths = [float(x) for x in (scene.get_attribute("data-link-widths") or "").split()]
        assert len(widths) == 16 and sum(x > 0 for x in widths) <= 8
        assert page.locator('#scene [data-testid^="block-"]').count() >= 2  # the blocks after the window, labelled
        # the arithmetic: the window's keys, and what the others add up to
        expect(page.get_by_test_id("arith-check")).to_contain_text(f"(all {N} keys)")

        # move the focus far: a block's row button; the rows around it come, the focused row opens under it
        blocks = ("#scene .label-layer", ".label-block, .label-block-top")  # the 3D view's block labels
        shown = watch_labels(w, blocks)
        page.get_by_test_id("blockrow-10").click()
        w.wait_ready(focus=edges[10])
        next_frames(page, 2)
        # the block labels are made anew for the new window: on the page all along
        assert fewest_labels(w) == min(shown, labels_shown(w, blocks)) > 0
        expect(page.get_by_test_id("blockrow-focus")).to_contain_text(f"{edges[10] + 1}")
        far = _api(server, detail="summary", rows=[edges[10]], stages=["weights", "top_keys", "top_weights"])
        top = far["top_keys"][edges[10]]
        assert page.locator('#scene [data-testid="block-0"]').count() == 1  # the first block, reached or labelled
        # the words around it: rows and keys around the focus, each the API's weight
        page.get_by_test_id("lod-tokens").click()
        w.wait_ready()
        around = f"rows and columns {edges[10] - 15}–{edges[10] + 16} of {N}"
        expect(page.get_by_test_id("table-window")).to_contain_text(around)
        for j in (edges[10] - 3, edges[10] - 1, edges[10]):
            assert _number(w.text(f"cell-{edges[10]}-{j}")) == pytest.approx(far["weights"][0][j], abs=5e-4)
        assert _number(w.text(f"cell-{edges[10]}-{edges[10] + 1}")) == 0  # a later key: hidden
        # open the block of its strongest key from the whole table: its keys beside the focused rows
        page.get_by_test_id("lod-blocks").click()
        w.wait_ready()
        block = next(c for c in range(16) if edges[c] <= top[0] < edges[c + 1])
        page.get_by_test_id(f"blockfocus-{block}").click()
        w.wait_ready()
        start = edges[block] if block != 10 else edges[10] - 15
        caption = w.text("table-window")
        if block != 10:
            assert f"keys {start + 1}–{start + 32}" in caption, caption
            if top[0] < start + 32:
                strongest = far["top_weights"][edges[10]][0]
                assert _number(w.text(f"cell-{edges[10]}-{top[0]}")) == pytest.approx(strongest, abs=5e-4)
        next_frames(page)
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "long-1280.png"))


@pytest.mark.parametrize(("size", "query"), [((1920, 1080), ""), ((390, 844), ""), ((1280, 720), "&present=1")])
def test_the_long_view_fits_every_screen(browser: Any, server: str, size: tuple[int, int], query: str) -> None:
    """At 1920 × 1080, on a phone and in the projector view: the blocks and the 3D view on the first screen,
    the page no wider than the screen (the table scrolls in its own box), the 3D window of 16 or 10 words."""
    with watched_page(browser, server, viewport={"width": size[0], "height": size[1]}) as w:
        _run(w, query=query)
        page = w.page
        next_frames(page)
        assert page.evaluate("document.documentElement.scrollWidth") <= size[0]
        count = 10 if size[0] < 600 or query else 16
        assert f"shows {count} of the {N} words" in w.text("scene-note")
        box = page.get_by_test_id("scene").bounding_box()
        assert box and box["width"] > 200 and box["height"] > 200
        if (
            size[0] >= 1280
        ):  # the whole table in blocks, every block column and row on the screen, in the lesson's column
            table = page.locator("#matrix").bounding_box()
            lesson = page.locator(".lesson").bounding_box()
            last = page.get_by_test_id("block-15-15").bounding_box()
            assert table and lesson and last
            assert table["x"] + table["width"] <= min(size[0], lesson["x"] + lesson["width"]) + 0.5, (table, lesson)
            assert last["x"] + last["width"] <= table["x"] + table["width"]
            if query:  # the projector's page does not scroll: the last row is above the bottom edge
                assert last["y"] + last["height"] <= size[1], last
        name = {1920: "1920", 390: "phone"}.get(size[0], "projector")
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / f"long-{name}.png"))


def test_over_the_limit_the_page_says_the_limit_in_tokens(watched: Watched) -> None:
    w = watched
    w.expect_console_error("422")
    w.page.goto(f"{w.base}/?model={DECODER}&sentence=Hello")  # the decoder picked: a sentence on screen
    w.page.wait_for_selector('#app[data-ready="true"][data-mode="sentence"]', timeout=120_000)
    w.page.get_by_test_id("sentence-input").fill(text(238))
    w.page.get_by_test_id("sentence-input").press("Enter")
    banner = w.page.get_by_test_id("error-banner")
    expect(banner).to_be_visible(timeout=60_000)
    expect(banner).to_contain_text("sentence is 4097 tokens")
    expect(banner).to_contain_text("the limit is 4096 tokens")
