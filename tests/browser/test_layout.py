"""The page's layout as a projector (1280×720) and phones (390×844, 360×740) show it: the 3D
view's labels never overlap, whatever the order in which the page, its fonts and its view's
size settle; a phone's page is never wider than its screen; what a step teaches is on screen.

The labels are CSS2D elements: their boxes on screen are read with getBoundingClientRect.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.browser.chapters import fits, shows_chapter
from tests.browser.conftest import Watched, watched_page
from tests.browser.helpers import next_frames
from tests.browser.registry import CHAPTERS, OPENING
from tests.browser.test_chapters_fit import FIRST
from tests.budget import examples

pytestmark = pytest.mark.browser

ANIMAL = "The animal didn't cross the street because it was too tired."
PHONES = [(390, 844), (360, 740)]

# every shown label of the 3D view: text and box; and every pair of boxes that overlap
LABEL_BOXES = """() => {
  const shown = [...document.querySelectorAll('.label-layer .label')]
    .filter((e) => e.style.display !== 'none' && !e.hidden && e.getClientRects().length);
  const boxes = shown.map((e) => {
    const b = e.getBoundingClientRect();
    return { text: e.textContent, left: b.left, top: b.top, right: b.right, bottom: b.bottom };
  });
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      // touching edges (antialiased borders) are not an overlap
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) {
        overlaps.push(`${a.text} × ${b.text}`);
      }
    }
  }
  const scene = document.getElementById('scene').getBoundingClientRect();
  const outside = boxes
    .filter((b) => b.left < scene.left - 1 || b.right > scene.right + 1
      || b.top < scene.top - 1 || b.bottom > scene.bottom + 1)
    .map((b) => b.text);
  return { count: boxes.length, texts: boxes.map((b) => b.text), overlaps, outside };
}"""


def _labels(w: Watched) -> dict[str, Any]:
    w.page.wait_for_selector('#scene[data-animating="false"]')
    result: dict[str, Any] = w.page.evaluate(LABEL_BOXES)
    return result


def _animal_by_button(w: Watched) -> None:
    w.goto()
    w.page.get_by_test_id("animal-go").click()
    w.wait_ready(mode="sentence", layer=3, head=1)
    # ready means computed; the view draws the new row at its next frame, with its CSS2D labels
    w.page.wait_for_function(
        "() => [...document.querySelectorAll('.label-layer .label')].some((e) => e.textContent === '[SEP]'"
        " && e.style.display !== 'none' && e.getClientRects().length)"
    )


@pytest.mark.parametrize("load", range(examples(20, 6)))
def test_sentence_labels_never_overlap_at_1280x720(browser: Any, server: str, load: int) -> None:
    """Issue 11, item 4: in about 1 load of 4 the labels stayed on one line and overlapped.

    The view decided one line or two before its camera was fitted to the new row (with the
    previous sentence's camera), and never again; it now fits first, measures the labels, and
    decides again whenever the view's size or the camera changes. Each load is a fresh context
    (nothing cached: the page, its fonts and its view settle in their own order): 6 loads here
    catch a 1-in-4 race 4 runs in 5; `make test-all` runs the 20 it was written with.
    """
    with watched_page(browser, server) as w:
        w.page.set_viewport_size({"width": 1280, "height": 720})
        _animal_by_button(w)
        seen = _labels(w)
        assert "[CLS]" in seen["texts"] and "animal" in seen["texts"] and "[SEP]" in seen["texts"]
        assert seen["count"] >= 2 * 16, seen  # every query and key named
        assert seen["overlaps"] == [], seen["overlaps"]
        assert seen["outside"] == [], seen["outside"]


def test_labels_redecided_when_the_view_resizes(browser: Any, server: str) -> None:
    """Opened wide, then narrowed: the labels take more lines instead of overlapping."""
    with watched_page(browser, server) as w:
        w.page.set_viewport_size({"width": 1600, "height": 900})
        w.goto(f"?sentence={quote(ANIMAL)}&step=score")
        w.wait_ready(mode="sentence")
        wide = w.page.evaluate("document.querySelector('.label-layer').dataset.lines")
        w.page.set_viewport_size({"width": 1000, "height": 720})
        w.page.wait_for_function("() => document.getElementById('scene').getBoundingClientRect().right <= 1000")
        next_frames(w.page)  # the view's resize decided the lines again and drew them
        narrow = w.page.evaluate("document.querySelector('.label-layer').dataset.lines")
        assert int(narrow) >= int(wide)
        seen = _labels(w)
        assert seen["overlaps"] == [], seen["overlaps"]


@pytest.mark.parametrize("size", PHONES)
def test_phone_example_labels_and_width(browser: Any, server: str, size: tuple[int, int]) -> None:
    """Issue 11, item 5 / issue 8 "Phones": the weights over the keys collided with each other
    and with the "queries q" caption (0.895 could not be read). Opened at the score step, then the
    softmax and mix steps by their buttons."""
    width, height = size
    with watched_page(browser, server) as w:
        w.page.set_viewport_size({"width": width, "height": height})
        w.goto("?focus=3&step=score")
        for step in ("score", "softmax", "mix"):
            w.page.get_by_test_id(f"step-{step}").click()
            w.wait_ready(step=step)
            seen = _labels(w)
            assert "queries q" in seen["texts"], step
            if step == "softmax":
                assert "0.895" in seen["texts"]
            assert seen["overlaps"] == [], (step, seen["overlaps"])
            assert seen["outside"] == [], (step, seen["outside"])
            assert w.page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("size", PHONES)
def test_phone_sentence_fits(browser: Any, server: str, size: tuple[int, int]) -> None:
    """The model sentence on a phone: [CLS] to [SEP] inside the view, no overlap, and the page
    (overview included) no wider than the screen."""
    width, height = size
    with watched_page(browser, server) as w:
        w.page.set_viewport_size({"width": width, "height": height})
        w.goto(f"?sentence={quote(ANIMAL)}&step=softmax")
        w.wait_ready(mode="sentence")
        w.page.wait_for_selector('#overview-grid[data-count="72"]', timeout=20_000)
        seen = _labels(w)
        assert "[CLS]" in seen["texts"] and "[SEP]" in seen["texts"]
        assert seen["overlaps"] == [], seen["overlaps"]
        assert seen["outside"] == [], seen["outside"]
        # every label reads whole: none cut by its ellipsis but the longest words
        cut = w.page.evaluate(
            "() => [...document.querySelectorAll('.label-layer .label')]"
            ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"
        )
        assert not {"[CLS]", "[SEP]", "it", "tired"} & set(cut), cut
        assert w.page.evaluate("document.documentElement.scrollWidth") <= width


LONG = (
    "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat "
    "and the bird sings a song in the old tall tree by the river"
)  # 33 tokens


def test_phone_long_sentence_draws_16_whole_words(browser: Any, server: str) -> None:
    """A 33-token sentence on a phone: its 3D view draws the 16 words around the focus (32 on a
    wider screen), every one of them whole, inside the view, none over another; the table keeps
    every row (it scrolls)."""
    with watched_page(browser, server) as w:
        w.page.set_viewport_size({"width": 390, "height": 844})
        w.goto(f"?sentence={quote(LONG)}&step=softmax&focus=12")
        w.wait_ready(mode="sentence")
        queries = "() => [...document.querySelectorAll('.label-layer .label-query')].map((e) => e.textContent)"
        words = w.page.evaluate(queries)
        assert sorted(words) == sorted(LONG.split()[3:19]), words  # tokens 4–19 of [CLS] the quick brown fox …
        assert w.page.locator(".label-layer .label-query.focused").inner_text() == "cat"
        assert "16 of the 33 rows (5–20, around the focused one)" in w.text("scene-note")
        seen = _labels(w)
        assert seen["overlaps"] == [], seen["overlaps"]
        assert seen["outside"] == [], seen["outside"]
        cut = w.page.evaluate(
            "() => [...document.querySelectorAll('.label-layer .label')]"
            ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"
        )
        assert cut == [], cut
        assert w.page.evaluate("document.querySelectorAll('#matrix tbody tr').length") == 33
        w.page.set_viewport_size({"width": 1280, "height": 800})  # wider: 32 words again
        w.page.wait_for_function(f"() => ({queries})().length === 32")


# ---- a projector: 1280 × 720 -------------------------------------------------------------------

FOLD = """() => {
  const bottom = (el) => el.getBoundingClientRect().bottom;
  const rows = [...document.querySelectorAll('#matrix tbody tr')];
  const cut = [...document.querySelectorAll('#matrix caption, #matrix th, #matrix th button, #matrix caption .notes')]
    .filter((e) => e.scrollWidth > e.clientWidth + 1 && !e.closest('thead th[data-col]'))
    .map((e) => e.textContent);
  return {
    arith: bottom(document.querySelector('.arith')),
    lastRow: bottom(rows[rows.length - 1]),
    height: innerHeight,
    cut,
  };
}"""


def test_projector_shows_the_arithmetic_without_scrolling(watched: Watched) -> None:
    """Issue 11, item 6: the worked arithmetic (and at the score step the table's last row) on
    the first screen at 1280×720; no caption or row header clipped. Every step, from the score step
    (opened by its URL) by the step buttons."""
    w = watched
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.goto("?focus=3&step=score")
    for step in ("score", "scale", "mask", "softmax", "mix"):
        w.page.get_by_test_id(f"step-{step}").click()
        w.wait_ready(step=step)
        seen = w.page.evaluate(FOLD)
        assert seen["arith"] <= seen["height"], (step, seen)
        if step == "score":
            assert seen["lastRow"] <= seen["height"], seen
        assert seen["cut"] == [], (step, seen["cut"])


def test_projector_softmax_caption_and_a_six_letter_word(watched: Watched) -> None:
    """ "full" of the softmax caption was clipped, and a 6-letter word clipped the Σ row column."""
    w = watched
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.goto("?focus=3&step=softmax")
    w.page.get_by_test_id("edit-token-4").fill("kitten")
    expect(w.page.get_by_test_id("row-4")).to_contain_text("kitten")
    w.wait_ready(step="softmax")
    caption = w.page.locator("#matrix caption")
    expect(caption).to_contain_text("full mask")
    seen = w.page.evaluate(FOLD)
    assert seen["cut"] == [], seen["cut"]
    box = w.page.evaluate(
        "(() => { const c = document.querySelector('#matrix caption').getBoundingClientRect();"
        " const w = document.querySelector('.table-wrap').getBoundingClientRect();"
        " const s = document.querySelector('[data-testid=rowsum-3]').getBoundingClientRect();"
        " return [c.right, w.right, s.right]; })()"
    )
    assert box[0] <= box[1] + 1 and box[2] <= box[1] + 1, box  # caption and Σ row inside the box


# ---- phones: a compact head, Back / Next in reach, a table that says it scrolls -------------


@pytest.mark.parametrize("size", PHONES)
def test_phone_head_is_compact_and_steps_are_in_reach(watched: Watched, size: tuple[int, int]) -> None:
    width, height = size
    w = watched
    w.page.set_viewport_size({"width": width, "height": height})
    w.goto("?focus=3&step=scale")
    explain, scene = w.page.evaluate(
        "['explain', 'scene'].map((id) => document.getElementById(id).getBoundingClientRect())"
        ".map((r) => [r.top, r.bottom])"
    )
    assert explain[0] <= 400, explain  # was ~830: header and step buttons took the first screen
    assert explain[1] <= scene[0], (explain, scene)  # the step's words, then the 3D view they speak of
    # every step's button in one row, none wider than the screen
    steps = w.page.evaluate(
        "[...document.querySelectorAll('#step-list button')]"
        ".map(b => b.getBoundingClientRect()).map(r => [r.top, r.right])"
    )
    assert len({round(t) for t, _ in steps}) == 1 and max(r for _, r in steps) <= width, steps
    # Back and Next stay at the bottom of the screen wherever the page is scrolled
    w.page.evaluate("window.scrollTo(0, document.body.scrollHeight / 2)")
    for testid in ("prev-step", "next-step"):
        r = w.page.get_by_test_id(testid).bounding_box()
        assert r is not None and height - 90 <= r["y"] and r["y"] + r["height"] <= height, (testid, r)
    w.page.get_by_test_id("next-step").click()
    w.wait_ready(step="mask")
    assert w.page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("size", PHONES)
def test_phone_table_caption_sticky_headers_and_arithmetic(watched: Watched, size: tuple[int, int]) -> None:
    width, height = size
    w = watched
    w.page.set_viewport_size({"width": width, "height": height})
    w.goto(f"?sentence={quote(ANIMAL)}&step=softmax")
    w.wait_ready(mode="sentence", step="softmax")
    seen = w.page.evaluate(
        """() => {
      const cap = document.querySelector('#matrix caption').getBoundingClientRect();
      const wrap = document.querySelector('.table-wrap');
      const sticky = (s) => getComputedStyle(document.querySelector(s)).position;
      return {
        captionRight: cap.right, width: innerWidth,
        scrolls: wrap.scrollWidth > wrap.clientWidth,
        sign: getComputedStyle(wrap).backgroundImage,
        head: sticky('#matrix thead th[data-col]'), word: sticky('#matrix tbody th'),
      };
    }"""
    )
    assert seen["captionRight"] <= seen["width"], seen  # the caption wraps on the screen
    assert seen["scrolls"] and "gradient" in seen["sign"], seen  # it scrolls, and shows that it does
    assert seen["head"] == "sticky" and seen["word"] == "sticky", seen
    # scrolled sideways, the words stay in view
    w.page.evaluate("document.querySelector('.table-wrap').scrollLeft = 400")
    left = w.page.evaluate("document.querySelector('[data-testid=row-10]').closest('th').getBoundingClientRect().left")
    assert 0 <= left <= 40, left
    # the arithmetic never wraps inside "(1.3 %)": each weight's line is one line
    w.goto("?focus=3&step=softmax")
    w.wait_ready(step="softmax")
    heights = w.page.evaluate(
        "[...document.querySelectorAll('#arith-lines li')].map(li => li.getBoundingClientRect().height"
        " / parseFloat(getComputedStyle(li).lineHeight))"
    )
    assert heights and max(heights) < 1.5, heights


# ---- every step of every chapter (issue 18) ------------------------------------------------------


# What a step's words refer to must be on the first screen with them. A chapter names it per step
# (step.figure, a CSS selector, in #app[data-figure]); else: the attention view's table header and
# focused row, or a chapter's 3D stage and every table and chart in its panel.
FIRST_SCREEN = """() => {
  const app = document.getElementById('app');
  const attention = app.dataset.layout === 'attention';
  const explain = document.querySelector(attention ? '#explain' : '#chapter-view .explain');
  const figure = app.dataset.figure || (attention
    ? '#matrix thead, #matrix tbody tr.focused'
    : '#chapter-stage, #chapter-panel table, #chapter-panel svg');
  const shown = (e) => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden';
  const below = (e) => {
    const r = e.getBoundingClientRect();
    return r.bottom + scrollY > innerHeight + 1 || r.top + scrollY < -1 || r.right > innerWidth + 1;
  };
  const parts = [...document.querySelectorAll(figure)].filter(shown);
  const name = (e) => e.dataset.testid || e.id || e.tagName.toLowerCase() + (e.className ? '.' + e.className : '');
  return {
    scrolled: scrollY,
    explain: below(explain),
    figures: parts.length,
    off: parts.filter(below).map(name),
  };
}"""

# at 390 × 844: overlapping 3D labels (either view), step names cut, anything wider than the screen
PHONE_CHECK = """() => {
  const labels = [...document.querySelectorAll('.label-layer > *, .label-layer .label')]
    .filter((e) => e.getClientRects().length && getComputedStyle(e).display !== 'none' && e.textContent.trim())
    .map((e) => ({ text: e.textContent, r: e.getBoundingClientRect() }));
  const overlaps = [];
  for (let i = 0; i < labels.length; i++) {
    for (let j = i + 1; j < labels.length; j++) {
      const a = labels[i].r, b = labels[j].r;
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1) {
        overlaps.push(`${labels[i].text} × ${labels[j].text}`);
      }
    }
  }
  const cut = [...document.querySelectorAll('#step-list button')]
    .filter((b) => b.scrollWidth > b.clientWidth + 1 || b.getBoundingClientRect().right > innerWidth + 1)
    .map((b) => b.textContent.trim());
  return { overlaps, cut, width: document.documentElement.scrollWidth };
}"""

# the lesson team's chapters that do not pass yet (issue 18 is theirs to fix; strict: a fix shows)
FIRST_SCREEN_PENDING: dict[str, str] = {}
PHONE_PENDING: dict[str, str] = {}


def _walk(w: Watched, chapter: str, check: str) -> dict[str, Any]:
    """Every step of `chapter`, from its first: `check`'s result for each step id. The chapter is opened
    by its URL, and shows what every opened chapter shows (chapters.shows_chapter: its title, "Chapter
    k of n", its numbers, its NumPy code). A chapter of its own layout (not the attention view) is also checked at
    each step as test_chapters_fit checks it (which runs in make test-all only): chapters.fits() (no
    sideways scroll; stage, explanation and panel apart; no two 3D labels over each other) and, at
    1280×720, the explanation and the panel's first table or chart inside the first screen."""
    w.page.goto(f"{w.base}/?chapter={chapter}{OPENING.get(chapter, '')}")
    w.page.wait_for_selector(f'#app[data-ready="true"][data-chapter="{chapter}"]', timeout=60_000)
    shows_chapter(w, chapter)
    steps = w.page.eval_on_selector_all("#step-list button", "(bs) => bs.map((b) => b.dataset.step)")
    seen: dict[str, Any] = {}
    for step in steps:
        w.page.locator(f'#step-list button[data-step="{step}"]').click()
        w.page.wait_for_selector(f'#app[data-ready="true"][data-step="{step}"]', timeout=30_000)
        attention = bool(w.page.locator('#app[data-layout="attention"]').count())
        if attention:
            w.page.wait_for_selector('#scene[data-animating="false"]')
        else:
            w.page.wait_for_selector("#chapter-text:not(:empty)", timeout=30_000)
        next_frames(w.page)  # the chapter's stage draws at its next frame
        seen[step] = w.page.evaluate(check)
        if not attention:
            if w.page.viewport_size == {"width": 1280, "height": 720}:
                text, table = w.page.evaluate(
                    """(sel) => [document.getElementById('chapter-text').getBoundingClientRect().bottom,
                                document.querySelector(document.getElementById('app').dataset.figure || sel)
                                    ?.getBoundingClientRect().bottom ?? 1e9]""",
                    FIRST,
                )
                assert text <= 720 and table <= 720, (chapter, step, text, table)
            fits(w)
    return seen


def _pending(chapter: str, pending: dict[str, str]) -> Any:
    return (
        pytest.param(chapter, marks=pytest.mark.xfail(reason=pending[chapter], strict=True))
        if chapter in pending
        else chapter
    )


@pytest.mark.parametrize("chapter", [_pending(c, FIRST_SCREEN_PENDING) for c in CHAPTERS])
def test_every_step_has_its_words_and_figure_on_the_first_screen(browser: Any, server: str, chapter: str) -> None:
    with watched_page(browser, server) as w:
        w.page.set_viewport_size({"width": 1280, "height": 720})
        seen = _walk(w, chapter, FIRST_SCREEN)
    bad = {s: v for s, v in seen.items() if v["scrolled"] or v["explain"] or v["off"] or not v["figures"]}
    assert not bad, f"{chapter}: not on the first screen at 1280×720: {bad}"


@pytest.mark.parametrize("chapter", [_pending(c, PHONE_PENDING) for c in CHAPTERS])
def test_every_step_on_a_phone_has_no_overlap_legible_steps_and_no_sideways_scroll(
    browser: Any, server: str, chapter: str
) -> None:
    with watched_page(browser, server, viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True) as w:
        seen = _walk(w, chapter, PHONE_CHECK)
        hints = w.page.evaluate("[...document.querySelectorAll('kbd')].filter((k) => k.getClientRects().length).length")
    bad = {s: v for s, v in seen.items() if v["overlaps"] or v["cut"] or v["width"] > 390}
    assert not bad, f"{chapter} at 390×844: {bad}"
    assert hints == 0, "keyboard hints on a touch screen"
