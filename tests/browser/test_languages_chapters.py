"""The chapters block, mistakes, today and tiles in Spanish, Chinese and Arabic (issue 43; their words are the
catalogs' "chapter.<id>.…" messages): every step of each, in one page per language and screen.

- The projector (1280×720, the presenter's view): every step in the language (the document's lang and dir, the
  step's title), no English sentence of five or more words left in the chapter's panels, nothing cut, no text
  drawn smaller than the projector's floor; in Arabic each chapter's tables read left to right.
- A phone (390×844) whose browser speaks the language: every step, nothing wider than the screen or cut.
- The example's words: Spanish and Chinese carry "the cat ate its fish" word for word (mistakes, tiles), Arabic
  keeps the English words and says so.
- A class question in one room: each phone writes it in its own language, the reveal too.
- axe-core at WCAG A/AA on a sample of steps (AXE_AT: each chapter in some language, Arabic in every one),
  on the projector's page as it walks.

LANGUAGE_SHOTS=<folder> keeps a screenshot of every step (to look at them).
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Watched, watched_page
from tests.browser.test_languages import CATALOGS, LANGS, english_left, language_of
from tests.browser.test_languages import PHONE_CUT as PAGE_PHONE_CUT
from tests.browser.test_projector import CUT, FLOOR, SMALLEST_TEXT, TOKEN, settle

pytestmark = pytest.mark.browser

# the chapters and the query that opens each (the lesson's example where a chapter has one)
CHAPTERS = {"block": "", "mistakes": "&example=the-cat-ate-its-fish", "today": "", "tiles": ""}
# the chapter's panels: its step's title and words, the step buttons, its panel, its numbers, its 3D labels
PANELS = ["#chapter-title", "#chapter-text", "#step-list", "#chapter-panel", "#lesson-numbers", "#chapter-stage"]
VISIBLE_WORDS = """(panels) => {
  const skip = 'code, pre, kbd, input, option:not(:checked), th[scope="row"], [aria-hidden="true"]';
  const out = [];
  for (const root of document.querySelectorAll(panels.join(','))) {
    if (!root.getClientRects().length) continue;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const e = walker.currentNode.parentElement;
      if (!e.getClientRects().length || e.closest(skip)) continue;
      out.push(walker.currentNode.textContent);
    }
    for (const a of root.querySelectorAll('[aria-label], [title]')) {
      for (const name of ['aria-label', 'title']) if (a.getAttribute(name)) out.push(a.getAttribute(name));
    }
  }
  return out.join('\\n');
}"""
# every table of the chapter's panel reads left to right: columns in order, its rows' names at the left
TABLES_LTR = """() => [...document.querySelectorAll('#chapter-panel table')].filter((t) => t.getClientRects().length)
  .map((t) => {
    const row = [...t.querySelectorAll('tbody tr')].find((r) => r.cells.length > 2) ?? t.querySelector('tr');
    const xs = [...row.cells].map((c) => c.getBoundingClientRect().left);
    return [t.dataset.testid || t.className, getComputedStyle(t).direction, xs.every((x, i) => !i || x > xs[i - 1])];
  })"""
# a phone: nothing wider than the screen or cut, but the chapters' tables scroll sideways in their own boxes
PHONE_CUT = PAGE_PHONE_CUT.replace("'.table-wrap,", "'.mini-scroll, .ca-scroll, .td-table, .table-wrap,")
assert PHONE_CUT != PAGE_PHONE_CUT
SHOTS = os.environ.get("LANGUAGE_SHOTS")
# where axe-core looks (language → chapter → step): a sample, every chapter in Arabic
AXE_AT = {
    "es": {"block": "attention", "tiles": "memory"},
    "zh": {"today": "gqa", "mistakes": "caveat"},
    "ar": {"block": "order", "mistakes": "softmax-columns", "today": "sink", "tiles": "read"},
}
AXE_RUN = "() => axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })"


def axe_problems(w: Watched) -> list[str]:
    from tests.browser.test_axe import AXE

    if not AXE.exists():
        return []  # axe-core is not installed (npm ci): test_axe says so
    if not w.page.evaluate("typeof axe !== 'undefined'"):
        w.page.add_script_tag(path=str(AXE))
    result = w.page.evaluate(AXE_RUN)
    return [f"axe {v['id']}: {v['help']} — {[n['target'][0] for n in v['nodes'][:4]]}" for v in result["violations"]]


def ready(chapter: str, step: str) -> str:
    return f'#app[data-ready="true"][data-chapter="{chapter}"][data-step="{step}"]'


def steps_of(w: Watched) -> list[str]:
    steps: list[str] = w.page.eval_on_selector_all("#step-list button", "(bs) => bs.map((b) => b.dataset.step)")
    return steps


def shot(w: Watched, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        w.page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def words_left(w: Watched) -> list[str]:
    return english_left(w.page.evaluate(VISIBLE_WORDS, PANELS))


def walk(w: Watched, lang: str, chapter: str, check: Any, next_step: Any) -> list[str]:
    """Every step of `chapter`, already open: check(step) → problems; next_step() goes on."""
    w.page.wait_for_selector(
        f'#app[data-ready="true"][data-chapter="{chapter}"]', timeout=180_000
    )  # the decoder's first load
    problems: list[str] = []
    steps = steps_of(w)
    assert len(steps) >= 4, steps
    for i, step in enumerate(steps):
        if i:
            next_step()
        w.page.wait_for_selector(ready(chapter, step), timeout=60_000)
        w.page.wait_for_selector("#chapter-text:not(:empty)")
        title = CATALOGS[lang][f"chapter.{chapter}.{steps_key(chapter, step)}.title"]
        assert w.text("chapter-title").endswith(title), (chapter, step, w.text("chapter-title"), title)
        problems += [f"{chapter}/{step}: {p}" for p in check(step)]
    return problems


def steps_key(chapter: str, step: str) -> str:
    """A step's key in the catalogs (the mistakes' ids have dashes, their keys none)."""
    return {"no-scale": "noScale", "softmax-columns": "softmaxColumns", "mask-after-softmax": "maskAfterSoftmax"}.get(
        step, step
    )


@pytest.mark.parametrize("lang", list(LANGS))
def test_every_step_on_the_projector(browser: Any, server: str, lang: str) -> None:
    """The teacher's projector view (1280×720) in `lang`: every step of the four chapters whole, in the language."""
    problems: list[str] = []
    with watched_page(browser, server, viewport={"width": 1280, "height": 720}, bypass_csp=True) as w:
        for chapter, query in CHAPTERS.items():
            w.page.goto(f"{server}/?token={TOKEN}&present=1&chapter={chapter}{query}&lang={lang}")
            w.page.wait_for_selector('[data-testid="join-qr"]')

            def check(step: str, chapter: str = chapter) -> list[str]:
                settle(w)
                out = [f"English left: {run!r}" for run in words_left(w)]
                assert language_of(w) == LANGS[lang][:2]
                cut = w.page.evaluate(CUT)
                if cut:
                    out.append(f"cut {cut}")
                least, which = w.page.evaluate(SMALLEST_TEXT)
                if least < FLOOR[1280] - 0.05:
                    out.append(f"text drawn at {least} px ({which})")
                if lang == "ar":
                    out += [
                        f"table {name} reads {d}" for name, d, ordered in w.page.evaluate(TABLES_LTR) if not ordered
                    ]
                if AXE_AT[lang].get(chapter) == step:
                    out += axe_problems(w)
                shot(w, f"{lang}-projector-{chapter}-{step}")
                return out

            problems += walk(w, lang, chapter, check, lambda: w.page.keyboard.press("ArrowRight"))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", list(LANGS))
def test_every_step_on_a_phone(browser: Any, server: str, lang: str) -> None:
    """A phone (390×844) whose browser speaks `lang`: every step of the four chapters fits the screen."""
    problems: list[str] = []
    with watched_page(browser, server, viewport={"width": 390, "height": 844}, locale=LANGS[lang][2]) as w:
        for chapter, query in CHAPTERS.items():
            w.page.goto(f"{server}/?chapter={chapter}{query}")

            def check(step: str, chapter: str = chapter) -> list[str]:
                out = [f"English left: {run!r}" for run in words_left(w)]
                assert language_of(w) == LANGS[lang][:2]
                cut = w.page.evaluate(PHONE_CUT)
                if cut:
                    out.append(f"cut {cut}")
                shot(w, f"{lang}-phone-{chapter}-{step}")
                return out

            problems += walk(w, lang, chapter, check, lambda: w.page.get_by_test_id("next-step").click())
    assert not problems, "\n".join(problems)


def api(base: str, method: str, path: str, body: Any = None, key: str = TOKEN) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(base + path, data=data, method=method, headers=headers)) as r:
        raw = r.read()
        return json.loads(raw) if raw else None


def test_a_class_question_on_each_phone_in_its_language(browser: Any, server: str) -> None:
    """One room, three phones (English, a Spanish browser, ?lang=ar): the server asks each question once, each
    phone writes it in its own language (the example's words as its table shows them), before and after the
    reveal; the room's state and the question's public part carry no words of any language but the English."""
    room = api(server, "POST", "/api/rooms")
    code, key = room["code"], room["presenter_key"]
    cat = "the-cat-ate-its-fish"
    api(server, "PUT", f"/api/rooms/{code}/state", {"chapter": "mistakes", "step": "no-scale", "example": cat}, key)
    with ExitStack() as stack:
        phones = {
            "en": stack.enter_context(watched_page(browser, server, viewport={"width": 390, "height": 844})),
            "es": stack.enter_context(
                watched_page(browser, server, viewport={"width": 390, "height": 844}, locale="es-ES")
            ),
            "ar": stack.enter_context(watched_page(browser, server, viewport={"width": 390, "height": 844})),
        }
        for lang, w in phones.items():
            w.page.goto(f"{server}/?room={code}" + ("&lang=ar" if lang == "ar" else ""))
            w.wait_ready(chapter="mistakes", step="no-scale")
        api(server, "POST", f"/api/rooms/{code}/quiz", {"question": "mistakes.late"}, key)
        for w in phones.values():
            w.page.wait_for_selector('[data-testid="quiz-question"]:not(:empty)')
        text = {lang: w.text("quiz-question") for lang, w in phones.items()}
        assert text["en"].startswith("The next mistake: softmax first") and "“its”" in text["en"]
        assert text["es"].startswith("El siguiente error: primero softmax") and "«su»" in text["es"]
        assert "الخطأ التالي" in text["ar"] and "its" in text["ar"]
        options = {lang: [w.text(f"quiz-option-{j}") for j in range(4)] for lang, w in phones.items()}
        assert options["en"] == ["less than 0.5", "0.5 to 0.9", "0.9 to just under 1", "exactly 1"]
        assert options["es"] == ["menos de 0,5", "de 0,5 a 0,9", "de 0,9 a casi 1", "exactamente 1"]
        assert options["ar"][3] == "1 تمامًا"
        assert phones["es"].text("quiz-result") == "Toca una respuesta."
        phones["es"].page.get_by_test_id("quiz-option-2").click()
        phones["es"].page.wait_for_selector('[data-testid="quiz-result"][data-verdict="counted"]')
        assert phones["es"].text("quiz-result").startswith("Contada: elegiste «de 0,9 a casi 1»")
        api(server, "POST", f"/api/rooms/{code}/quiz/reveal", None, key)
        for w in phones.values():
            w.page.wait_for_selector('[data-testid="quiz-explain"]:not(:empty)')
        assert phones["es"].text("quiz-explain").startswith("La fila de «su» suma ")
        assert phones["es"].text("quiz-result").startswith(("¡Correcto!", "Esta vez no"))
        assert phones["ar"].text("quiz-result").startswith("لم تُجب.")
        assert phones["en"].text("quiz-result").startswith("You did not answer. The answer: “")
        # a cell question: the grid's words are the example's in Spanish
        api(server, "PUT", f"/api/rooms/{code}/state", {"chapter": "masks", "step": "full", "example": cat}, key)
        phones["es"].wait_ready(chapter="masks", step="full")
        api(server, "POST", f"/api/rooms/{code}/quiz", {"question": "masks.zero"}, key)
        grid = phones["es"].page.locator('[data-testid="quiz-grid"]')
        grid.wait_for()
        heads = grid.locator("tr").first.locator("th").all_inner_texts()
        assert heads[1:] == ["el", "gato", "comió", "su", "pescado"], heads
        assert phones["es"].page.get_by_test_id("quiz-option-4").get_attribute("aria-label") == "el → pescado"
        # the grid reads left to right in Arabic too: its first column at the left
        phones["ar"].page.locator('[data-testid="quiz-grid"]').wait_for()
        xs = phones["ar"].page.evaluate(
            "[0, 1, 2].map((j) => document.querySelector(`[data-testid='quiz-option-${j}']`)"
            ".getBoundingClientRect().left)"
        )
        assert xs == sorted(xs), xs
        state = api(server, "GET", f"/api/rooms/{code}")["state"]
        assert not any(re.search(r"[^\x00-\x7f]", f"{k}{v}") for k, v in state.items()), state
        api(server, "DELETE", f"/api/rooms/{code}/quiz", None, key)
