"""The lesson's frame and the chapters rnn, projections, steps, scaling, heads and positions in Spanish,
Chinese and Arabic (issue 43, second pass; the masks chapter, walked past here, is test_languages.py's).

One projector page (1280×720, the presenter's view) and one phone (390×844, its language from the
browser's own) per language walk every step of these chapters, from the first chapter's first step on
(PageDown, the phone's Next and Next chapter buttons). At every step:

- the document's lang and dir; the chapter line ("Capítulo 1 de 12: …") and the step's title are the
  catalog's; no English sentence of five or more words is left in the panels (quoted tokens and code
  excepted: test_languages.english_left), the 3D view's labels, the tables and the numbers included;
- nothing is cut on the projector (test_projector's CUT) nor wider than the phone (PHONE_CUT);
- in Arabic every table of numbers reads left to right (its columns, its rows' names at the left) while
  the step's words read right to left;
- axe-core finds nothing at WCAG A/AA on a sample of steps (one of each kind of panel).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import Watched, watched_page
from tests.browser.registry import CHAPTERS
from tests.browser.test_axe import AXE
from tests.browser.test_languages import CATALOGS, LANGS, PANELS, VISIBLE_WORDS, english_left
from tests.browser.test_projector import CUT, TOKEN, settle

pytestmark = pytest.mark.browser

# the chapters walked, in the lesson's order, and their steps (masks is on the way: PageDown goes through it)
WALK: dict[str, list[str]] = {
    "rnn": ["chain", "fade", "direct"],
    "projections": ["x", "q", "k", "v", "all"],
    "steps": ["score", "scale", "mask", "softmax", "mix"],
    "scaling": ["spread", "unscaled", "scaled"],
    "masks": ["full", "causal", "weights", "difference"],
    "heads": ["heads", "concat", "wo", "model"],
    "positions": ["plain", "sinusoid", "model"],
}
FORMULA_TITLES = {("projections", "q"), ("projections", "k"), ("projections", "v")}  # "q = x · W_Q": no words
AXE_AT = {("rnn", "fade"), ("steps", "softmax"), ("heads", "concat"), ("positions", "sinusoid")}

# the chapter view's panels (the attention view's are test_languages.PANELS), and the 3D view's labels
CHAPTER_PANELS = ["#chapter-name", "#stepper", "#next-chapter", "#chapter-view", "#lesson-numbers", "#numpy-title"]
# the page's visible words as test_languages reads them, without skipping the 3D view's labels (.label)
LABELLED_WORDS = VISIBLE_WORDS.replace(".label, ", "")
ISOLATES = re.compile("[\u2066-\u2069\u200e\u200f]")

# In Arabic: every visible table reads left to right (its cells' left edges grow along a row, the row's
# name at the left of its first cell) inside a right-to-left page, and a sign keeps to the left of what
# it signs in the sentences (−∞, √d_k, ∂h_t: all-neutral characters the bidi algorithm would move).
# Returns what reads otherwise.
TABLES_LEFT_TO_RIGHT = """() => {
  const bad = [];
  for (const table of document.querySelectorAll('#chapter-panel table, #matrix')) {
    if (!table.getClientRects().length) continue;
    const name = table.dataset.testid || table.querySelector('caption')?.textContent || table.className;
    if (getComputedStyle(table).direction !== 'ltr') bad.push([name, 'direction', getComputedStyle(table).direction]);
    const row = [...table.querySelectorAll('tbody tr')].find((tr) => tr.querySelectorAll('td').length > 1);
    if (!row) continue;
    const cells = [...row.children].filter((c) => c.getClientRects().length);
    const lefts = cells.map((c) => c.getBoundingClientRect().left);
    if (lefts.some((x, i) => i && x <= lefts[i - 1])) bad.push([name, 'columns', lefts.map(Math.round)]);
  }
  const words = getComputedStyle(document.getElementById('chapter-text')).direction;
  if (words !== 'rtl') bad.push(['chapter-text', words]);
  // a sign stays at the left of what it signs inside the Arabic sentences: −∞, √d_k, ∂h_t
  const walker = document.createTreeWalker(document.getElementById('app'), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.parentElement.getClientRects().length) continue;
    for (const m of node.textContent.matchAll(/−∞|√d|∂h/g)) {
      const at = (i) => {
        const r = document.createRange();
        r.setStart(node, i);
        r.setEnd(node, i + 1);
        return r.getBoundingClientRect();
      };
      const [a, b] = [at(m.index), at(m.index + 1)];
      if (a.width && b.width && a.left > b.left) bad.push(['sign at the right', m[0], node.textContent.slice(0, 40)]);
    }
  }
  return bad;
}"""


# On a phone the page scrolls down; nothing may be wider than the screen, cut by an ellipsis or cut off at
# the side, but a wide table may scroll sideways in a box of its own that is itself on the screen.
PHONE_CUT = """() => {
  const bad = [];
  const vw = innerWidth;
  const wide = document.documentElement.scrollWidth;
  if (wide > vw + 1) bad.push(['page scrolls sideways', wide]);
  const scrolls = (e) => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  const walker = document.createTreeWalker(document.getElementById('app'), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const e = node.parentElement;
    if (!node.textContent.trim() || !e.getClientRects().length || e.closest('pre, #scene')) continue;
    const cs = getComputedStyle(e);
    if (cs.visibility === 'hidden' || cs.clipPath !== 'none') continue;  // hidden, or for screen readers only
    const text = node.textContent.trim();
    const name = e.id || e.className;
    if (cs.textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1) bad.push(['ellipsis', name, text]);
    let box = e;
    while (box && box !== document.body && !scrolls(box)) box = box.parentElement;
    if (box && box !== document.body) {  // it scrolls sideways in its box: the box must be on the screen
      const r = box.getBoundingClientRect();
      if (r.left < -1 || r.right > vw + 1) bad.push(['a scrolling box off the side', name, text.slice(0, 40)]);
      continue;
    }
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width >= 1 && (r.left < -1 || r.right > vw + 1)) bad.push(['off the side', name, text.slice(0, 40)]);
    }
  }
  return bad.slice(0, 8);
}"""


def catalog_text(lang: str, key: str, **values: object) -> str:
    """A catalog's plain message with its {placeholders} filled (the frame's messages have no plurals)."""
    text = CATALOGS[lang][key]
    for name, value in values.items():
        text = text.replace("{" + name + "}", str(value))
    return ISOLATES.sub("", text)


def ready(w: Watched, chapter: str, step: str) -> None:
    w.page.wait_for_selector(f'#app[data-ready="true"][data-chapter="{chapter}"][data-step="{step}"]', timeout=60_000)
    text = "#step-text" if chapter in ("steps", "masks") else "#chapter-text"
    w.page.wait_for_selector(f"{text}:not(:empty)", timeout=30_000)


def plain(w: Watched, selector: str) -> str:
    return ISOLATES.sub("", w.page.locator(selector).first.inner_text()).strip()


def frame_problems(w: Watched, lang: str, chapter: str, step: str) -> list[str]:
    """The chapter line and the step's title in `lang` (the title from the catalogs, numbered)."""
    problems = []
    at = f"{chapter}/{step}"
    title = catalog_text(lang, f"chapter.{chapter}.title")
    line = catalog_text(lang, "lesson.chapterOf", k=CHAPTERS.index(chapter) + 1, n=len(CHAPTERS), title=title)
    if plain(w, "#chapter-name") != line:
        problems.append(f"{at}: the chapter line is {plain(w, '#chapter-name')!r}, not {line!r}")
    if (chapter, step) not in FORMULA_TITLES:
        heading = "#step-title" if chapter in ("steps", "masks") else "#chapter-title"
        want = f"{WALK[chapter].index(step) + 1}. {catalog_text(lang, f'chapter.{chapter}.{step}.title')}"
        if plain(w, heading) != want:
            problems.append(f"{at}: the title is {plain(w, heading)!r}, not {want!r}")
    return problems


def words_problems(w: Watched, chapter: str, step: str) -> list[str]:
    panels = PANELS if chapter in ("steps", "masks") else [*CHAPTER_PANELS, "#chapter-stage"]
    words: str = w.page.evaluate(LABELLED_WORDS, panels)
    return [f"{chapter}/{step}: English left: {run!r}" for run in english_left(words)]


def axe_problems(w: Watched, at: str) -> list[str]:
    if not AXE.exists():
        return []
    if not w.page.evaluate("typeof axe !== 'undefined'"):
        w.page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = w.page.evaluate(
        "() => axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })"
    )
    return [
        f"{at}: axe {v['id']} ({v['impact']}): {v['help']} — " + "; ".join(n["target"][0] for n in v["nodes"][:5])
        for v in result["violations"]
    ]


def walk(w: Watched, lang: str, turn: Any, look: Any) -> list[str]:
    """Every step of WALK from rnn's first: `look(chapter, step)` at each, `turn(last)` to go on (`last`:
    from a chapter's last step to the next chapter)."""
    problems: list[str] = []
    seen = []
    for chapter, steps in WALK.items():
        for k, step in enumerate(steps):
            if seen:
                turn(last=(k == 0))
            ready(w, chapter, step)
            seen.append(f"{chapter}/{step}")
            lang_dir = w.page.evaluate("[document.documentElement.lang, document.documentElement.dir]")
            assert lang_dir == list(LANGS[lang][:2]), (chapter, step, lang_dir)
            problems += look(chapter, step)
    assert len(seen) == sum(map(len, WALK.values()))
    return problems


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_lesson_on_the_projector(browser: Any, server: str, lang: str) -> None:
    """The teacher's projector view (1280×720) walked with PageDown in `lang`."""
    with watched_page(browser, server, viewport={"width": 1280, "height": 720}, bypass_csp=True) as w:
        w.page.goto(f"{server}/?token={TOKEN}&present=1&chapter=rnn&step=chain&lang={lang}")
        w.page.wait_for_selector('[data-testid="join-qr"]')

        def look(chapter: str, step: str) -> list[str]:
            settle(w)
            at = f"{chapter}/{step}"
            found = frame_problems(w, lang, chapter, step) + words_problems(w, chapter, step)
            cut = w.page.evaluate(CUT)
            if cut:
                found.append(f"{at}: cut {cut}")
            if lang == "ar":
                found += [f"{at}: {bad}" for bad in w.page.evaluate(TABLES_LEFT_TO_RIGHT)]
            if (chapter, step) in AXE_AT:
                found += axe_problems(w, at)
            return found

        problems = walk(w, lang, lambda last: w.page.keyboard.press("PageDown"), look)
        assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_lesson_on_a_phone_in_the_browsers_language(browser: Any, server: str, lang: str) -> None:
    """A phone (390×844) whose browser speaks `lang`, walked with its Next and Next chapter buttons."""
    with watched_page(browser, server, viewport={"width": 390, "height": 844}, locale=LANGS[lang][2]) as w:
        w.page.goto(f"{server}/?chapter=rnn&step=chain")

        def turn(last: bool) -> None:
            w.page.get_by_test_id("next-chapter" if last else "next-step").click()

        def look(chapter: str, step: str) -> list[str]:
            at = f"{chapter}/{step}"
            found = words_problems(w, chapter, step)
            cut = w.page.evaluate(PHONE_CUT)
            if cut:
                found.append(f"{at}: cut {cut}")
            return found

        problems = walk(w, lang, turn, look)
        assert not problems, "\n".join(problems)
