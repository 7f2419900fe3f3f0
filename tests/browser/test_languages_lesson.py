"""The whole lesson in Spanish, Chinese and Arabic (issue 43): every step of every chapter whose words are
in the catalogs, on a projector, and a sample of steps on a phone.

One projector page (1280×720, the presenter's view) per language walks the lesson from the first chapter's
first step to the last chapter's last with PageDown. At every step:

- the document's lang and dir; the chapter line ("Capítulo 1 de 12: …") and the step's numbered title are
  the catalog's; no English sentence of five or more words is left in the panels (quoted tokens and code
  excepted: test_languages.english_left), the 3D view's labels, the tables and the numbers included;
- nothing is cut (test_projector's CUT) and no text is drawn below 95 % of the projector's floor;
- in Arabic every table of numbers reads left to right (its columns, its rows' names at the left) while
  the step's words read right to left, and a sign (−∞, √d_k, ∂h_t) stays at the left of what it signs;
- axe-core finds nothing at WCAG A/AA on a sample of steps (AXE_AT: every chapter once, in some language).

One phone (390×844, its language from the browser's own) per language opens a sample of steps (PHONE_AT:
every chapter in some language): nothing wider than the screen, nothing cut, no English sentence.

LANGUAGE_SHOTS=<folder> keeps a screenshot of every step walked (to look at them).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Watched, watched_page
from tests.browser.registry import CHAPTERS
from tests.browser.test_axe import AXE
from tests.browser.test_languages import (
    CATALOGS,
    LANGS,
    PANELS,
    VISIBLE_WORDS,
    english_left,
    mirrored,
    table_reads_left_to_right,
)
from tests.browser.test_projector import CUT, FLOOR, SMALLEST_TEXT, TOKEN

pytestmark = pytest.mark.browser

LATER = {"inside"}  # chapters whose words move to the catalogs in a later pass: passed over
WALKED = [c for c in CHAPTERS if c not in LATER]
ATTENTION_VIEW = {"steps", "masks"}  # chapters drawn on the attention view (its own panels)
FORMULA_TITLES = {("projections", "q"), ("projections", "k"), ("projections", "v")}  # "q = x · W_Q": no words
# where axe-core looks on the projector's walk (it costs a second or more a run): every chapter once, in one
# of the languages
AXE_AT = {
    "es": {("steps", "softmax"), ("block", "attention"), ("tiles", "memory"), ("writing", "size")},
    "zh": {("heads", "concat"), ("mistakes", "caveat"), ("today", "gqa"), ("projections", "all")},
    "ar": {("rnn", "fade"), ("scaling", "unscaled"), ("masks", "weights"), ("positions", "sinusoid")},
}
# the phone's sample (chapter, step, query): every chapter in some language, the widest tables among them
PHONE_AT = {
    "es": [("rnn", "fade", ""), ("steps", "mask", ""), ("block", "attention", ""), ("writing", "size", "")],
    "zh": [("projections", "all", ""), ("heads", "concat", ""),
           ("mistakes", "no-scale", "&example=the-cat-ate-its-fish"), ("today", "gqa", "")],
    "ar": [("scaling", "unscaled", ""), ("masks", "weights", "&example=the-cat-ate-its-fish&focus=3"),
           ("positions", "model", ""), ("tiles", "read", "")],
}  # fmt: skip
# A language's longer words may zoom the projector's panel a little further than English's to fit it
# (classroom/fit.js): its text is drawn at 95 % of the floor at least (Spanish's masks tables: 13.4 px).
LONGER_WORDS = 0.95
# the mistakes chapter's step ids have dashes, their catalog keys none
STEP_KEYS = {"no-scale": "noScale", "softmax-columns": "softmaxColumns", "mask-after-softmax": "maskAfterSoftmax"}

# the chapter view's panels (the attention view's are test_languages.PANELS), and the 3D view's labels
CHAPTER_PANELS = ["#chapter-name", "#stepper", "#next-chapter", "#chapter-view", "#lesson-numbers", "#numpy-title"]
# the page's visible words as test_languages reads them, without skipping the 3D view's labels (.label)
LABELLED_WORDS = VISIBLE_WORDS.replace(".label, ", "")
ISOLATES = re.compile("[\u2066-\u2069\u200e\u200f]")
SHOTS = os.environ.get("LANGUAGE_SHOTS")

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
    w.page.wait_for_selector(f'#app[data-ready="true"][data-chapter="{chapter}"][data-step="{step}"]', timeout=180_000)
    text = "#step-text" if chapter in ATTENTION_VIEW else "#chapter-text"
    w.page.wait_for_selector(f"{text}:not(:empty)", timeout=30_000)


def laid_out(w: Watched) -> None:
    """Two frames for the panels to be laid out (and fitted to the projector) again, the fonts loaded."""
    w.page.wait_for_function(
        "() => document.fonts.ready.then(() => new Promise((r) => requestAnimationFrame(() => "
        "requestAnimationFrame(() => r(true)))))"
    )


def plain(w: Watched, selector: str) -> str:
    return ISOLATES.sub("", w.page.locator(selector).first.inner_text()).strip()


def steps_of(w: Watched) -> list[str]:
    steps: list[str] = w.page.eval_on_selector_all("#step-list button", "(bs) => bs.map((b) => b.dataset.step)")
    return steps


def frame_problems(w: Watched, lang: str, chapter: str, step: str, k: int) -> list[str]:
    """The chapter line and the step's title (`k`: its number) in `lang`, from the catalogs."""
    problems = []
    at = f"{chapter}/{step}"
    title = catalog_text(lang, f"chapter.{chapter}.title")
    line = catalog_text(lang, "lesson.chapterOf", k=CHAPTERS.index(chapter) + 1, n=len(CHAPTERS), title=title)
    if plain(w, "#chapter-name") != line:
        problems.append(f"{at}: the chapter line is {plain(w, '#chapter-name')!r}, not {line!r}")
    if (chapter, step) not in FORMULA_TITLES:
        heading = "#step-title" if chapter in ATTENTION_VIEW else "#chapter-title"
        want = f"{k}. {catalog_text(lang, f'chapter.{chapter}.{STEP_KEYS.get(step, step)}.title')}"
        if plain(w, heading) != want:
            problems.append(f"{at}: the title is {plain(w, heading)!r}, not {want!r}")
    return problems


def words_problems(w: Watched, chapter: str, step: str) -> list[str]:
    panels = PANELS if chapter in ATTENTION_VIEW else [*CHAPTER_PANELS, "#chapter-stage"]
    words: str = w.page.evaluate(LABELLED_WORDS, panels)
    return [f"{chapter}/{step}: English left: {run!r}" for run in english_left(words)]


def axe_problems(w: Watched, at: str) -> list[str]:
    if not AXE.exists():
        return []  # axe-core is not installed (npm ci): test_axe says so
    if not w.page.evaluate("typeof axe !== 'undefined'"):
        w.page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = w.page.evaluate(
        "() => axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })"
    )
    return [
        f"{at}: axe {v['id']} ({v['impact']}): {v['help']} — " + "; ".join(n["target"][0] for n in v["nodes"][:5])
        for v in result["violations"]
    ]


def shot(w: Watched, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        w.page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_whole_lesson_on_the_projector(browser: Any, server: str, lang: str) -> None:
    """The teacher's projector view (1280×720) in `lang`, walked with PageDown from the first step to the last."""
    problems: list[str] = []
    walked: list[str] = []
    with watched_page(browser, server, viewport={"width": 1280, "height": 720}, bypass_csp=True) as w:
        w.page.goto(f"{server}/?token={TOKEN}&present=1&chapter={WALKED[0]}&lang={lang}")
        w.page.wait_for_selector('[data-testid="join-qr"]')
        for chapter in WALKED:
            w.page.wait_for_selector(f'#app[data-ready="true"][data-chapter="{chapter}"]', timeout=180_000)
            steps = steps_of(w)
            assert len(steps) >= 2, (chapter, steps)
            for k, step in enumerate(steps, start=1):
                if k > 1:
                    w.page.keyboard.press("PageDown")
                ready(w, chapter, step)
                laid_out(w)
                at = f"{chapter}/{step}"
                walked.append(at)
                lang_dir = w.page.evaluate("[document.documentElement.lang, document.documentElement.dir]")
                assert lang_dir == list(LANGS[lang][:2]), (at, lang_dir)
                problems += frame_problems(w, lang, chapter, step, k) + words_problems(w, chapter, step)
                cut = w.page.evaluate(CUT)
                if cut:
                    problems.append(f"{at}: cut {cut}")
                least, which = w.page.evaluate(SMALLEST_TEXT)
                if least < FLOOR[1280] * LONGER_WORDS - 0.05:
                    problems.append(f"{at}: text drawn at {least} px < {FLOOR[1280] * LONGER_WORDS} ({which})")
                if lang == "ar":
                    problems += [f"{at}: {bad}" for bad in w.page.evaluate(TABLES_LEFT_TO_RIGHT)]
                if (chapter, step) in AXE_AT[lang]:
                    problems += axe_problems(w, at)
                shot(w, f"{lang}-projector-{chapter}-{step}")
            while chapter != WALKED[-1]:  # on to the next chapter walked, past any passed over
                w.page.keyboard.press("PageDown")
                w.page.wait_for_function(
                    "(c) => document.getElementById('app').dataset.chapter !== c && "
                    "document.getElementById('app').dataset.ready === 'true'",
                    arg=chapter,
                    timeout=180_000,
                )
                shown = w.page.evaluate("document.getElementById('app').dataset.chapter")
                if shown not in LATER:
                    break
                chapter = shown
    assert len(walked) > 50 and {a.split("/")[0] for a in walked} == set(WALKED), walked
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", list(LANGS))
def test_a_sample_of_steps_on_a_phone_in_the_browsers_language(browser: Any, server: str, lang: str) -> None:
    """A phone (390×844) whose browser speaks `lang`: each step of its sample fits the screen, in the language."""
    problems: list[str] = []
    with watched_page(browser, server, viewport={"width": 390, "height": 844}, locale=LANGS[lang][2]) as w:
        for chapter, step, query in PHONE_AT[lang]:
            w.page.goto(f"{server}/?chapter={chapter}&step={step}{query}")
            ready(w, chapter, step)
            at = f"{chapter}/{step}"
            lang_dir = w.page.evaluate("[document.documentElement.lang, document.documentElement.dir]")
            assert lang_dir == list(LANGS[lang][:2]), (at, lang_dir)
            problems += words_problems(w, chapter, step)
            cut = w.page.evaluate(PHONE_CUT)
            if cut:
                problems.append(f"{at}: cut {cut}")
            if lang == "ar" and chapter == "masks":
                # the steps bar and the explanation mirrored, the weights' table, the arithmetic and the code not
                mirrored(w)
                table_reads_left_to_right(w)
                # Arabic is drawn with the app's font (its glyphs join by the font's shaping), loaded first
                assert w.page.evaluate("document.fonts.check('700 16px \"A3D Noto Sans Arabic\"', 'الانتباه')")
                used = w.page.evaluate("getComputedStyle(document.getElementById('step-text')).fontFamily")
                assert used.startswith('"A3D Noto Sans Arabic"'), used
            shot(w, f"{lang}-phone-{chapter}-{step}")
    assert not problems, "\n".join(problems)
