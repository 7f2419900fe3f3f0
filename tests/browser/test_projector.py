"""The projector view (issue 17) of every chapter and every step, at 1280×720 and 1920×1080.

For each step at each size: no text cut (no ellipsis, no line clamp, nothing outside the viewport
or outside a box that clips it, the page does not scroll), the smallest text of the explanation and
the side panel at least the floor (14 px at 1280×720, 21 px at 1920×1080: its font size × every zoom
and transform on the way up, an SVG's text × its drawn scale), the line that says chapter · step
(· mask), and the 3D content inside its canvas (no drawn pixel on the canvas's edges, some inside).
The decoder's chapters (10 writing, 11 today) run on the session's server, whose data folder has
the decoder converted once for every test that uses it.

`make test` walks every step at 1280×720 (the tighter screen) and each chapter's first step at 1920×1080
as well: the projector view's root size is 1.5vw, so at 1920×1080 (the same 16:9) the page is the
1280×720 one drawn half as large again, and what may differ (borders and gaps set in px, the 3D view's
resolution) shows at any step; `make test-all` walks every step at both.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import Watched, watched_page
from tests.browser.helpers import canvas_pixels
from tests.browser.registry import CHAPTERS as LESSON
from tests.browser.registry import OPENING
from tests.budget import ALL

pytestmark = pytest.mark.browser

# the session server's teacher token (tests/browser/conftest.py running_server)
TOKEN = "browser-tests-teacher-token"  # the session's server's (conftest.running_server)
SIZES = ((1280, 720), (1920, 1080))
FLOOR = {1280: 14.0, 1920: 21.0}  # px: readable from the back of a classroom, and larger on a larger screen
SMALLEST: dict[tuple[str, int], float] = {}  # (chapter, width) → the smallest text seen (printed for the report)

# every chapter (the page's registry) with the query that opens it: the attention chapters at "its",
# the Write chapter with six tokens already written (OPENING), so their views have content
AT_ITS = "&example=the-cat-ate-its-fish&focus=3"
CHAPTERS = {c: {"steps": AT_ITS, "masks": AT_ITS, **OPENING}.get(c, "") for c in LESSON}
# chapters whose stage draws nothing at some step (its words are about a table): step ids
EMPTY_STAGE = {"writing": {"write", "size", "candidates"}, "today": {"distance"}}

# What the projector view may not do: cut text (an ellipsis, a line clamp, text past the viewport or
# past a box that clips it), scroll, or draw 3D content past its canvas. Returns what it found.
CUT = """() => {
  const bad = [];
  const vw = innerWidth, vh = innerHeight;
  const root = document.documentElement;
  if (root.scrollWidth > vw + 1 || root.scrollHeight > vh + 1) {
    bad.push(['page scrolls', root.scrollWidth, root.scrollHeight]);
  }
  const name = (e) => e.id || e.dataset.testid || e.className || e.tagName;
  const clips = (e) => {
    const s = getComputedStyle(e);
    return s.overflowX !== 'visible' || s.overflowY !== 'visible';
  };
  const walker = document.createTreeWalker(document.getElementById('app'), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const text = node.textContent.trim();
    const el = node.parentElement;
    if (!text || !el.getClientRects().length || el.closest('details:not([open]) > :not(summary)')) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === 'hidden' || cs.opacity === '0') continue;
    if (cs.textOverflow === 'ellipsis' && el.scrollWidth > el.clientWidth + 1) bad.push(['ellipsis', name(el), text]);
    if (cs.webkitLineClamp && cs.webkitLineClamp !== 'none') bad.push(['line clamp', name(el), text]);
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1) continue;
      const box = [r.left, r.top, r.right, r.bottom].map(Math.round);
      const out = r.left < -1 || r.top < -1 || r.right > vw + 1 || r.bottom > vh + 1;
      if (out) bad.push(['outside the viewport', name(el), text.slice(0, 40), box]);
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        if (!clips(a)) continue;
        const c = a.getBoundingClientRect();
        if (r.left < c.left - 1 || r.right > c.right + 1 || r.top < c.top - 1 || r.bottom > c.bottom + 1) {
          const clip = [c.left, c.top, c.right, c.bottom].map(Math.round);
          bad.push(['clipped by ' + name(a), name(el), text.slice(0, 40), box, clip]);
          break;
        }
      }
    }
  }
  return bad.slice(0, 8);
}"""

# The smallest text a student reads in the explanation, the side panel and the 3D view's labels, as
# drawn: the computed font size × the zoom of the element and every ancestor × the scale of every
# transform on the way up; SVG text: its font size × the drawn height of its box over its height in
# the SVG's own units.
SMALLEST_TEXT = """() => {
  const panels = '.workspace .lesson, #chapter-view .chapter-side, #scene, #chapter-stage';
  const roots = [...document.querySelectorAll(panels)].filter((r) => r.getClientRects().length);
  let least = Infinity, where = '';
  const scale = (e) => {
    let s = 1;
    for (let a = e; a; a = a.parentElement) {
      const cs = getComputedStyle(a);
      s *= parseFloat(cs.zoom) || 1;
      if (cs.transform && cs.transform !== 'none') {
        const m = new DOMMatrixReadOnly(cs.transform);
        s *= Math.hypot(m.b, m.d);
      }
    }
    return s;
  };
  for (const root of roots) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      const e = node.parentElement;
      if (!node.textContent.trim() || !e.getClientRects().length) continue;
      const cs = getComputedStyle(e);
      if (cs.visibility === 'hidden' || cs.opacity === '0') continue;
      const size = parseFloat(cs.fontSize);
      if (!size) continue;  // a label drawn at size 0 is not shown
      let px;
      if (e instanceof SVGGraphicsElement) {
        const box = e.getBBox();
        px = box.height ? size * e.getBoundingClientRect().height / box.height : size;
      } else {
        px = size * scale(e);
      }
      if (px < least) {
        least = px;
        where = (e.dataset.testid || e.id || e.tagName.toLowerCase()) + ': ' + node.textContent.trim().slice(0, 30);
      }
    }
  }
  return [Math.round(least * 100) / 100, where];
}"""

# the 3D content inside its canvas: no drawn pixel in a frame along the canvas's edges
EDGE_PIXELS = """const w = c.width, h = c.height;
  const [r0, g0, b0] = [d[(8 * w + 8) * 4], d[(8 * w + 8) * 4 + 1], d[(8 * w + 8) * 4 + 2]];
  const band = (v, n) => v >= 3 && v < 6 || v >= n - 6 && v < n - 3;  // inside the border, at the edge
  const corner = (v, n) => v < 12 || v >= n - 12;  // the rounded corners are the box's, not the scene's
  let edge = 0, inside = 0;
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
    const i = (y * w + x) * 4;
    if (Math.abs(d[i] - r0) + Math.abs(d[i + 1] - g0) + Math.abs(d[i + 2] - b0) <= 40) continue;
    if ((band(x, w) && !corner(y, h)) || (band(y, h) && !corner(x, w))) edge++;
    else if (x >= 6 && y >= 6 && x < w - 6 && y < h - 6) inside++;
  }
  return [edge, inside];"""

READY = '#app[data-ready="true"][data-chapter="{chapter}"][data-step="{step}"]'


def settle(w: Watched) -> None:
    """Two frames for the panels to be laid out again, then the 3D view's flight to its frame."""
    w.page.wait_for_timeout(250)
    w.page.wait_for_function(
        "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"
    )
    if w.page.locator('#app[data-layout="attention"]').count():
        w.page.wait_for_selector('#scene[data-animating="false"]')


def look(w: Watched, chapter: str, step: str, width: int) -> list[str]:
    """What is wrong with this step's projector view at this size (empty: nothing)."""
    problems: list[str] = []
    at = f"{chapter}/{step} at {width}"
    where = w.text("projector-where")
    if not (re.match(r"Chapter \d+ of \d+: ", where) and " · " in where):
        problems.append(f"{at}: the where line says {where!r}")
    if chapter in ("steps", "masks") and not where.endswith(" mask"):
        problems.append(f"{at}: the where line has no mask: {where!r}")
    cut = w.page.evaluate(CUT)
    if cut:
        problems.append(f"{at}: cut {cut}")
    least, which = w.page.evaluate(SMALLEST_TEXT)
    SMALLEST[(chapter, width)] = min(SMALLEST.get((chapter, width), 99.0), least)
    if least < FLOOR[width] - 0.05:
        problems.append(f"{at}: text drawn at {least} px < {FLOOR[width]} ({which})")
    canvas = "scene" if chapter in ("steps", "masks") else "chapter-stage"
    testid = w.page.evaluate(f"document.querySelector('#{canvas} canvas').dataset.testid")
    empty = step in EMPTY_STAGE.get(chapter, set())
    edge, inside = 0, 0
    for _ in range(4):  # a view still flying to its frame gets a moment more
        edge, inside = canvas_pixels(w, testid, EDGE_PIXELS)
        if (inside >= 500 or empty) and not edge:
            break
        w.page.wait_for_timeout(400)
    if edge or (inside < 500 and not empty):
        problems.append(f"{at}: 3D content on the canvas's edge ({edge} px, {inside} inside)")
    return problems


def walk_chapter(w: Watched, chapter: str, query: str | None = None) -> list[str]:
    """Every step of `chapter` in the projector view, at both sizes (make test: the first step only at
    1920×1080); `query`: the chapter's query (default: CHAPTERS')."""
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(f"{w.base}/?chapter={chapter}{CHAPTERS[chapter] if query is None else query}&present=1")
    w.page.wait_for_selector(
        f'#app[data-ready="true"][data-chapter="{chapter}"]', timeout=180_000
    )  # the decoder's first load
    w.page.wait_for_selector('[data-testid="join-qr"]')
    steps: list[str] = w.page.eval_on_selector_all("#step-list button", "(bs) => bs.map((b) => b.dataset.step)")
    assert len(steps) >= 3, steps
    problems: list[str] = []
    for i, step in enumerate(steps):
        if i:
            w.page.keyboard.press("ArrowRight")
        w.page.wait_for_selector(READY.format(chapter=chapter, step=step), timeout=60_000)
        for width, height in SIZES if ALL or i == 0 else SIZES[:1]:
            w.page.set_viewport_size({"width": width, "height": height})
            settle(w)
            problems += look(w, chapter, step, width)
        w.page.set_viewport_size({"width": 1280, "height": 720})
    return problems


@pytest.fixture(scope="module")
def projector(browser: Any, server: str) -> Any:
    """One presenter page for the module: the teacher link, Present (a room is open)."""
    with watched_page(browser, server) as w:
        w.page.goto(f"{server}/?token={TOKEN}&present=1")
        w.wait_ready()
        w.page.wait_for_selector('[data-testid="join-qr"]')
        yield w


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_every_step_of_every_chapter_is_whole_and_large_on_the_projector(projector: Watched, chapter: str) -> None:
    problems = walk_chapter(projector, chapter)
    print({k: v for k, v in SMALLEST.items() if k[0] == chapter})
    assert not problems, "\n".join(problems)


# A teacher's own sentence: 15 tokens (the masks still compared side by side: COMPARE_MAX is 20) and 33
LONG = {
    15: "the quick brown fox jumps over the lazy dog while the cat sleeps",
    33: "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat "
    "and the bird sings a song in the old tall tree by the river",
}


@pytest.mark.parametrize(("chapter", "tokens"), [("steps", 33), ("masks", 15)])
def test_a_long_typed_sentence_is_whole_on_the_projector(projector: Watched, chapter: str, tokens: int) -> None:
    """A sentence the teacher typed, longer than a projector can show whole: the table shows the 7
    rows and columns around the focused word and says which (the masks compared: 4), the 3D view
    16 words, every step whole and as large as the lesson's example (the page, as a laptop shows
    it, keeps its 64 and 32)."""
    w = projector
    query = f"&sentence={LONG[tokens].replace(' ', '+')}&focus=12"
    problems = walk_chapter(w, chapter, query)
    assert not problems, "\n".join(problems)
    n = w.page.evaluate("document.querySelectorAll('#matrix tbody tr').length")
    assert w.page.evaluate("document.querySelectorAll('#matrix thead th[data-col]').length") == n == 7
    rows = "10–16" if tokens == 33 else "9–15"  # focus 12: 3 rows either side, where the sentence has them
    assert w.text("table-window") == f"rows and columns {rows} of {tokens}, around the focused word"
    assert w.page.get_by_test_id("table-window").is_visible() or chapter == "masks"  # the masks' step hides it
    queries = "document.querySelectorAll('#scene .label-query').length"
    # the 3D view's word labels come with the frame after the page says it is ready (none there yet once,
    # under the whole suite's load): wait for as many as the view shows (a wrong count ends in a timeout)
    w.page.wait_for_function(f"(n) => {queries} === n", arg=min(tokens, 16))
    if chapter == "steps":  # a word at the window's edge, focused: the window moves to have it in its middle
        w.page.get_by_test_id("row-9").click()
        w.page.wait_for_selector('#app[data-ready="true"][data-focus="9"]')
        assert w.text("table-window") == "rows and columns 7–13 of 33, around the focused word"
        word = w.page.locator("[data-testid=row-9] .tok").inner_text()
        assert w.page.locator("#scene .label-query.focused").inner_text() == word == "dog"
    if chapter == "masks":  # the last step: the masks side by side, around the focused word
        assert w.text("compare-window") == f"rows and columns 11–14 of {tokens}, around the focused word"
        heads = w.page.locator("[data-testid=compare-full] thead th").all_inner_texts()
        assert heads == ["while", "the", "cat", "sleeps"], heads
        assert not w.page.locator("#matrix").is_visible()  # one of the two tables beside it
    w.page.get_by_role("button", name="Exit presenting").click()
    w.wait_ready()
    # every row again: the first 24 drawn at once, the rest in the page's idle time after (table.js), so
    # wait for them (under the whole suite's load 24 were there once when the page said it was ready)
    # (a function, not an expression: the page's CSP refuses the eval that polls an expression)
    w.page.wait_for_function("(n) => document.querySelectorAll('#matrix tbody tr').length === n", arg=tokens)
    w.page.wait_for_function(f"(n) => {queries} === n", arg=min(tokens, 32))


def test_the_projector_shows_the_whole_step_the_sums_and_its_menus(projector: Watched) -> None:
    w = projector
    w.page.set_viewport_size({"width": 1280, "height": 720})
    # the step's text is whole: the mix step's key sentence is there, nothing to scroll
    w.page.goto(f"{w.base}/?chapter=steps&step=mix&example=the-cat-ate-its-fish&focus=3&present=1")
    w.wait_ready(step="mix")
    text = w.text("step-text")
    assert "…" not in text and "z = Σ weight × v" in text and text.endswith("knowing about “cat”.")
    assert w.page.evaluate(
        "(() => { const t = document.getElementById('step-text'); return t.scrollHeight <= t.clientHeight + 1; })()"
    )
    # the Σ column of both tables of `mistakes` is on screen
    w.page.goto(f"{w.base}/?chapter=mistakes&present=1")
    w.wait_ready(chapter="mistakes")
    settle(w)
    sums = w.page.locator("#chapter-panel th", has_text=re.compile(r"^Σ( row)?$"))
    assert sums.count() >= 2 and all(sums.nth(i).is_visible() for i in range(sums.count()))
    # the chapter menu and the lessons panel are reachable from the projector view
    w.page.get_by_test_id("chapters-toggle").click()
    w.page.wait_for_selector('[data-testid="contents"]:visible')
    w.page.keyboard.press("Escape")
    w.page.locator("[data-testid=lessons] summary").click()
    w.page.wait_for_selector('[data-testid="lesson-select"]:visible')
    w.page.locator("[data-testid=lessons] summary").click()
    # the clicker keys keep walking; B blanks
    w.page.keyboard.press("b")
    assert w.page.get_by_test_id("blank").is_visible()
    w.page.keyboard.press("b")
    assert not w.page.get_by_test_id("blank").is_visible()


def test_folded_blocks_open_from_their_tabs(projector: Watched) -> None:
    """A step whose panel holds more than fits: what the step speaks of stays, large; the rest is
    one tap away (a tab opens it as a sheet over the panel, Escape closes it)."""
    w = projector
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(f"{w.base}/?chapter=heads&step=heads&present=1")
    w.wait_ready(chapter="heads", step="heads")
    settle(w)
    assert w.page.get_by_test_id("head-weights-0").is_visible()  # the step's figure
    # and head 2's table, of the figure's kind (the words compare the two heads); the W matrices fold first
    assert w.page.get_by_test_id("head-weights-1").is_visible()
    tabs = w.page.locator('[data-testid="projector-tabs"] button')
    names = [tabs.nth(i).inner_text() for i in range(tabs.count())]
    assert "Controls" in names and len(names) == len(set(names)), names
    assert any(n.startswith("W_Q1") for n in names), names
    controls = w.page.locator("#chapter-panel .chapter-controls")
    assert not controls.is_visible()
    tabs.nth(names.index("Controls")).click()
    assert controls.is_visible()
    box = controls.bounding_box()
    assert box and box["y"] >= 0 and box["y"] + box["height"] <= 720 and box["x"] + box["width"] <= 1280
    w.page.keyboard.press("Escape")
    assert not controls.is_visible()


# The bounding box of the 3D view's own drawing (the WebGL canvas, without the labels over it): the
# pixels that differ from the background (read at a corner), as a fraction of the canvas's size.
COVERAGE = """const w = c.width, h = c.height;
  const [r0, g0, b0] = [d[(8 * w + 8) * 4], d[(8 * w + 8) * 4 + 1], d[(8 * w + 8) * 4 + 2]];
  let x0 = w, x1 = -1, y0 = h, y1 = -1;
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) {
    const i = (y * w + x) * 4;
    if (Math.abs(d[i] - r0) + Math.abs(d[i + 1] - g0) + Math.abs(d[i + 2] - b0) <= 40) continue;
    x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
  }
  return [(x1 - x0 + 1) / w, (y1 - y0 + 1) / h];"""
LABELS_SHOWN = """(shown) => {
  document.querySelector('#chapter-stage .label-layer').style.visibility = shown ? '' : 'hidden';
}"""


# rnn keeps its own camera: fitted to its drawing, a 12-word chain's labels "h0 = 0" and "h1" touch
@pytest.mark.parametrize("chapter", ["heads", "positions"])
def test_the_3d_view_fills_its_canvas_on_the_projector(projector: Watched, chapter: str) -> None:
    """Issue 17: the chapter's 3D drawing is framed to its canvas, not small in its middle: its
    bounding box covers at least 70% of the canvas's width or of its height (the first step, 1280×720)."""
    w = projector
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(f"{w.base}/?chapter={chapter}&present=1")
    w.wait_ready(chapter=chapter)
    w.page.wait_for_selector('[data-testid="join-qr"]')
    settle(w)
    w.page.evaluate(LABELS_SHOWN, False)  # the drawing alone (labels are HTML over the canvas)
    wide, tall = canvas_pixels(w, "stage-canvas", COVERAGE)
    w.page.evaluate(LABELS_SHOWN, True)
    print(chapter, round(wide, 3), round(tall, 3))
    assert max(wide, tall) >= 0.7, (chapter, wide, tall)


def test_a_step_reached_by_its_arrow_key_is_framed_without_a_resize(projector: Watched) -> None:
    """The walk above resizes the view at every step (1280×720, 1920×1080, back), which refits the
    camera; a presenter who resized the window once, then only presses ArrowRight, must see every
    step whole too."""
    w = projector
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(f"{w.base}/?chapter=scaling&present=1")
    w.wait_ready(chapter="scaling")
    w.page.set_viewport_size({"width": 1920, "height": 1080})  # the first step seen on a larger screen
    settle(w)
    w.page.set_viewport_size({"width": 1280, "height": 720})
    settle(w)
    for step in ("unscaled", "scaled"):
        w.page.keyboard.press("ArrowRight")
        w.page.wait_for_selector(READY.format(chapter="scaling", step=step), timeout=60_000)
    settle(w)
    problems = look(w, "scaling", "scaled", 1280)
    assert not problems, "\n".join(problems)
