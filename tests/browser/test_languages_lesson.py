"""The whole lesson in Spanish, Chinese and Arabic (issue 43): every step of every chapter whose words are
in the catalogs, on a projector and on a phone.

For each language one projector page (1280×720, the presenter's view, ?lang=) and one phone page (390×844,
its language from the browser's own) walk the lesson side by side with PageDown: both pages draw each step
at the same time, and one call per page reads all that is checked. `make test-all` walks every chapter in
each language; `make test` walks every chapter in one of the three (SHARE: the chapters of the language's
axe-core checks), and the pages go from one of its chapters to the next by the contents list when the lesson
has others in between. At every step, on both:

- the document's lang and dir; the chapter line ("Capítulo 1 de 13: …") and the step's numbered title are
  the catalog's; no English sentence of five or more words is left in the panels (quoted tokens and code
  excepted: test_languages.english_left), the 3D view's labels, the tables and the numbers included;
- nothing is cut: on the projector test_projector's CUT, and no text drawn below the projector's floor
  (FLOOR_SHARE of it); on the phone nothing wider than the screen (a wide table scrolls in its own box);
- in Arabic every table of numbers reads left to right (its columns, its rows' names at the left) while
  the step's words read right to left, a sign (−∞, √d_k, ∂h_t) stays at the left of what it signs, and
  every run of English words inside Arabic text (a quoted prompt, a sentence the model reads) is isolated
  in a left-to-right box of its own, so that a line that wraps inside it still reads in order;
- axe-core finds nothing at WCAG A/AA on the projector at a sample of steps (AXE_AT: every chapter once,
  in some language).

LANGUAGE_SHOTS=<folder> keeps a screenshot of every step walked, projector and phone (to look at them).
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
from tests.budget import ALL

pytestmark = pytest.mark.browser

WALKED = list(CHAPTERS)  # the whole lesson, Look inside too, on both pages
ATTENTION_VIEW = ["steps", "masks"]  # chapters drawn on the attention view (its own panels)
FORMULA_TITLES = {("projections", "q"), ("projections", "k"), ("projections", "v")}  # "q = x · W_Q": no words
# where axe-core looks on the projector's walk (it costs a second or more a run): every chapter once, in one
# of the languages
AXE_AT = {
    "es": {("steps", "softmax"), ("block", "attention"), ("tiles", "memory"), ("writing", "size")},
    "zh": {("heads", "concat"), ("mistakes", "caveat"), ("today", "gqa"), ("projections", "all")},
    "ar": {
        ("rnn", "fade"),
        ("scaling", "unscaled"),
        ("masks", "weights"),
        ("positions", "sinusoid"),
        ("inside", "lens"),
    },
}
# the chapters each language walks in make test: those of its axe-core checks (every chapter in one language)
SHARE = {lang: [c for c in WALKED if c in {chapter for chapter, _ in AXE_AT[lang]}] for lang in AXE_AT}
# The share of the projector's floor (14 px at 1280×720) a language's smallest text may be drawn at: its
# longer words may zoom the panel (classroom/fit.js) no further than English's.
FLOOR_SHARE = {"es": 1.0, "zh": 1.0, "ar": 1.0}
# the projector's where line ends with the mask's name on the attention view: its message's cases
MASK_NAMES = {
    lang: tuple(re.findall(r"(?:causal|full) \{([^{}]+)\}", CATALOGS[lang]["classroom.present.mask"])) for lang in LANGS
}
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

# Runs of two or more English words inside right-to-left text: each must sit in a left-to-right isolate of
# its own (U+2066/U+2068 … U+2069 in the text, or an element of direction ltr that is a block or isolates
# its content: <bdi>, dir=, unicode-bidi: isolate), else a line that wraps inside the run puts its words
# out of order. Code, the 3D view and the tables (left-to-right blocks) pass by that rule.
ENGLISH_RUNS_ISOLATED = """() => {
  const bad = [];
  const isolating = ['isolate', 'isolate-override', 'plaintext'];
  const walker = document.createTreeWalker(document.getElementById('app'), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const e = node.parentElement;
    if (!e.getClientRects().length || e.closest('code, pre, kbd')) continue;
    const outside = node.textContent.replace(/[\u2066-\u2068][^\u2069]*\u2069/g, ' ');
    const runs = outside.match(/[A-Za-z][A-Za-z'’-]*(?:[ ,.:;!?]+[A-Za-z][A-Za-z'’-]*)+/g);
    if (!runs) continue;
    let own = false;
    for (let a = e; a && getComputedStyle(a).direction === 'ltr'; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (isolating.includes(cs.unicodeBidi) || !cs.display.startsWith('inline')) { own = true; break; }
    }
    if (!own) bad.push(...runs.map((r) => [e.id || e.dataset.testid || e.className || e.tagName, r]));
  }
  return bad.slice(0, 8);
}"""

# A quoted English run inside Arabic text: its quotation marks are the Arabic sentence's (right to left),
# only the words inside them left to right, so that the opening mark stands at the right of the run's first
# letter and the closing one at the left of its last, on one line or wrapped over two. (Marks caught inside
# the run's left-to-right isolate would stand at its outer ends: a wrapped quote then reads as two.) A label
# that reads in the direction of its first letter ("m لـ«its»", unicode-bidi: plaintext) is left to right.
QUOTES_READ_RIGHT = """() => {
  const bad = [];
  const marks = '[\u2066-\u2069\u200e\u200f]*';  // isolates and direction marks around the words
  const QUOTED = new RegExp(`«${marks}([A-Za-z][^«»\u2069]*)${marks}»`, 'g');
  const box = (node, i) => {
    const r = document.createRange();
    r.setStart(node, i);
    r.setEnd(node, i + 1);
    return r.getBoundingClientRect();
  };
  const walker = document.createTreeWalker(document.getElementById('app'), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const e = node.parentElement;
    if (!e.getClientRects().length || getComputedStyle(e).direction !== 'rtl') continue;
    const text = node.textContent;
    // a line that reads in the direction of its first letter (unicode-bidi: plaintext), left to right
    const first = text.replace(/[\u2066-\u2068][^\u2069]*\u2069/g, '').match(/[A-Za-z\u0600-\u06ff]/);
    if (getComputedStyle(e).unicodeBidi === 'plaintext' && /[A-Za-z]/.test(first?.[0] ?? '')) continue;
    for (const m of text.matchAll(QUOTED)) {
      const open = m.index, close = m.index + m[0].length - 1;
      const first = text.indexOf(m[1], open), last = first + m[1].trimEnd().length - 1;
      if (box(node, open).left < box(node, first).left || box(node, close).right > box(node, last).right) {
        bad.push([e.id || e.dataset.testid || e.className || e.tagName, 'quotation marks out of place', m[1]]);
      }
    }
  }
  return bad.slice(0, 8);
}"""

# A step drawn: the page ready on another step than `[chapter, step]`, its words written, the fonts loaded,
# two frames for the panels to be laid out (and fitted to the projector) again.
NEXT_STEP = """([chapter, step, attention]) => {
  const app = document.getElementById('app');
  if (app.dataset.ready !== 'true' || (app.dataset.chapter === chapter && app.dataset.step === step)) return false;
  const text = document.querySelector(attention.includes(app.dataset.chapter) ? '#step-text' : '#chapter-text');
  if (!text || !text.textContent.trim()) return false;
  return document.fonts.ready.then(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(
    () => r(true)))));
}"""

# PageDown as a clicker sends it, handled just after this call returns: both pages draw the next step at
# once (a key pressed through the browser's input would wait for the page to have handled it)
PAGE_DOWN = """() => { setTimeout(() => document.body.dispatchEvent(
  new KeyboardEvent('keydown', { key: 'PageDown', bubbles: true, cancelable: true })), 0); }"""

# All that is checked at a step, read in one call: `a` says which page (phone) and which checks (rtl).
LOOK = f"""(a) => {{
  const app = document.getElementById('app');
  const chapter = app.dataset.chapter;
  const attention = a.attention.includes(chapter);
  const text = (s) => document.querySelector(s)?.innerText ?? '';
  return {{
    chapter, step: app.dataset.step,
    steps: [...document.querySelectorAll('#step-list button')].map((b) => b.dataset.step),
    lang: document.documentElement.lang, dir: document.documentElement.dir,
    line: text('#chapter-name'), title: text(attention ? '#step-title' : '#chapter-title'),
    where: text('[data-testid="projector-where"]'),
    words: ({LABELLED_WORDS})(attention ? a.panels : a.chapterPanels),
    cut: a.phone ? ({PHONE_CUT})() : ({CUT})(),
    least: a.phone ? null : ({SMALLEST_TEXT})(),
    tables: a.rtl ? ({TABLES_LEFT_TO_RIGHT})() : [],
    runs: a.rtl ? [...({ENGLISH_RUNS_ISOLATED})(), ...({QUOTES_READ_RIGHT})()] : [],
  }};
}}"""


def catalog_text(lang: str, key: str, **values: object) -> str:
    """A catalog's plain message with its {placeholders} filled (the frame's messages have no plurals)."""
    text = CATALOGS[lang][key]
    for name, value in values.items():
        text = text.replace("{" + name + "}", str(value))
    return ISOLATES.sub("", text)


def plain(text: str) -> str:
    return ISOLATES.sub("", text).strip()


def problems_at(lang: str, seen: dict[str, Any], phone: bool) -> list[str]:
    """What is wrong with a step as LOOK read it (empty: nothing)."""
    chapter, step, steps = seen["chapter"], seen["step"], seen["steps"]
    at = f"{'phone' if phone else 'projector'} {chapter}/{step}"
    problems = []
    if [seen["lang"], seen["dir"]] != list(LANGS[lang][:2]):
        problems.append(f"{at}: the document is {seen['lang']}, {seen['dir']}")
    title = catalog_text(lang, f"chapter.{chapter}.title")
    line = catalog_text(lang, "lesson.chapterOf", k=CHAPTERS.index(chapter) + 1, n=len(CHAPTERS), title=title)
    if plain(seen["line"]) != line:
        problems.append(f"{at}: the chapter line is {plain(seen['line'])!r}, not {line!r}")
    if (chapter, step) not in FORMULA_TITLES:
        k = steps.index(step) + 1
        want = f"{k}. {catalog_text(lang, f'chapter.{chapter}.{STEP_KEYS.get(step, step)}.title')}"
        if plain(seen["title"]) != want:
            problems.append(f"{at}: the title is {plain(seen['title'])!r}, not {want!r}")
    problems += [f"{at}: English left: {run!r}" for run in english_left(seen["words"])]
    if seen["cut"]:
        problems.append(f"{at}: cut {seen['cut']}")
    if seen["least"] is not None:
        least, which = seen["least"]
        floor = FLOOR[1280] * FLOOR_SHARE[lang]
        if least < floor - 0.05:
            problems.append(f"{at}: text drawn at {least} px < {floor} ({which})")
    problems += [f"{at}: {bad}" for bad in seen["tables"]]
    problems += [f"{at}: English words out of order: {bad}" for bad in seen["runs"]]
    if not phone and chapter in ATTENTION_VIEW and not plain(seen["where"]).endswith(MASK_NAMES[lang]):
        problems.append(f"{at}: the projector's where line ends {plain(seen['where'])[-30:]!r}, not a mask's name")
    return problems


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


def open_chapter(w: Watched, chapter: str) -> None:
    """To `chapter` by the contents list, as a teacher skipping chapters would."""
    w.page.get_by_test_id("chapters-toggle").click()
    w.page.get_by_test_id(f"chapter-link-{chapter}").click()


def arabic_phone(w: Watched) -> None:
    """The Arabic phone at the masks chapter: the steps bar and the explanation mirrored, the weights'
    table, the arithmetic and the code not; Arabic drawn with the app's font (its glyphs join by the
    font's shaping), loaded first."""
    mirrored(w)
    table_reads_left_to_right(w)
    assert w.page.evaluate("document.fonts.check('700 16px \"A3D Noto Sans Arabic\"', 'الانتباه')")
    used = w.page.evaluate("getComputedStyle(document.getElementById('step-text')).fontFamily")
    assert used.startswith('"A3D Noto Sans Arabic"'), used


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_whole_lesson_on_a_projector_and_a_phone(browser: Any, server: str, lang: str) -> None:
    """The teacher's projector view (1280×720, ?lang=) and a phone (390×844) whose browser speaks `lang`,
    walked side by side with PageDown from the first step to the last."""
    problems: list[str] = []
    walked: list[str] = []
    steps: dict[str, list[str]] = {}  # each chapter's steps, as its page lists them
    rtl = LANGS[lang][1] == "rtl"
    walks = WALKED if ALL else SHARE[lang]
    first = walks[0]
    with (
        watched_page(browser, server, viewport={"width": 1280, "height": 720}, bypass_csp=True) as projector,
        watched_page(browser, server, viewport={"width": 390, "height": 844}, locale=LANGS[lang][2]) as phone,
    ):
        projector.page.goto(f"{server}/?token={TOKEN}&present=1&chapter={first}&lang={lang}")
        phone.page.goto(f"{server}/?chapter={first}")
        projector.page.wait_for_selector('[data-testid="join-qr"]', timeout=90_000)  # a room opened under load
        pages = {"projector": projector, "phone": phone}
        at = ["", ""]
        while True:
            seen = {}
            for name, w in pages.items():
                w.page.wait_for_function(NEXT_STEP, arg=[*at, ATTENTION_VIEW], timeout=180_000)
                args = {"phone": name == "phone", "rtl": rtl, "attention": ATTENTION_VIEW, "panels": PANELS,
                        "chapterPanels": [*CHAPTER_PANELS, "#chapter-stage"]}  # fmt: skip
                seen[name] = w.page.evaluate(LOOK, args)
            chapter, step = seen["projector"]["chapter"], seen["projector"]["step"]
            assert (seen["phone"]["chapter"], seen["phone"]["step"]) == (chapter, step), (seen["phone"], chapter, step)
            at = [chapter, step]
            if chapter in walks:
                walked.append(f"{chapter}/{step}")
                steps.setdefault(chapter, seen["projector"]["steps"])
                for name, w in pages.items():
                    problems += problems_at(lang, seen[name], phone=name == "phone")
                    shot(w, f"{lang}-{name}-{chapter}-{step}")
                if (chapter, step) in AXE_AT[lang]:
                    problems += axe_problems(projector, f"projector {chapter}/{step}")
                if rtl and (chapter, step) == ("masks", "weights"):
                    arabic_phone(phone)
            last = step == seen["projector"]["steps"][-1]
            if chapter == walks[-1] and last:
                break
            after = WALKED[WALKED.index(chapter) + 1] if last else chapter
            for w in pages.values():
                if after in walks:  # the clicker's PageDown, pressed on both pages at once
                    w.page.evaluate(PAGE_DOWN)
                else:
                    open_chapter(w, walks[walks.index(chapter) + 1])
    assert list(steps) == walks and walked == [f"{c}/{s}" for c in walks for s in steps[c]], walked
    assert not problems, "\n".join(problems)


def test_make_test_walks_every_chapter_in_one_language() -> None:
    walked = [c for lang in SHARE for c in SHARE[lang]]
    assert sorted(walked) == sorted(WALKED), SHARE
