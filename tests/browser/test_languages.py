"""The page in Spanish, Chinese and Arabic (issue 43): what the lesson's walk (test_languages_lesson.py:
every step of every chapter, on a projector and a phone's sample) does not check.

- The English sentence finder those walks use finds English and only English.
- One room: the projector in English, a phone in Spanish and one in Arabic, on the same step and focus,
  each in its words; a class question written on each phone in its language, its verdicts and its
  reveal too; the room's state has no language in it.
- The menu keeps the reader's choice; an English page loads no catalog and no font.
- The Arabic and Chinese fonts are subsets that cover their catalogs, under their licence.
- An exported view keeps its language offline.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import ROOT, Watched, watched_page
from tests.browser.helpers import offline_page
from tests.browser.test_projector import TOKEN

pytestmark = pytest.mark.browser

I18N = ROOT / "static" / "i18n"
CATALOGS = {c: json.loads((I18N / f"{c}.json").read_text("utf-8")) for c in ("en", "es", "zh", "ar")}
LANGS = {"es": ("es", "ltr", "es-ES"), "zh": ("zh-Hans", "ltr", "zh-CN"), "ar": ("ar", "rtl", "ar-EG")}

# the panels whose words are in the catalogs now (the chapter's name line and the classroom's bar are not yet)
PANELS = [
    ".topbar .source", "#chapters-toggle", ".write-link", ".language-pick", "#stepper .step-list", "#prev-step",
    "#next-step", ".mask-toggle", ".predict-switch", "#explain", "#predict-box", ".arith", "#matrix caption",
    "#matrix .corner", "#compare", "#numpy-title", "#lesson-numbers", "#scene-note", ".legend", ".keys-hint",
    "#export-bar", "#editor", "#error-banner", "#withheld-note",
]  # fmt: skip
# The visible words of those panels, without what is not a sentence of ours: code, the example's
# tokens (the Write chapter's prompt and written text: the model's own) and anything quoted (a word the
# text names), the 3D view's labels.
VISIBLE_WORDS = """(panels) => {
  const skip = 'code, pre, kbd, .tok, .wr-prompt, .wr-tok, .arith-key, .label, option:not(:checked), '
    + 'th[scope="row"], [aria-hidden="true"]';
  const out = [];
  for (const root of document.querySelectorAll(panels.join(','))) {
    if (!root.getClientRects().length) continue;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const e = walker.currentNode.parentElement;
      if (!e.getClientRects().length || e.closest(skip)) continue;
      out.push(walker.currentNode.textContent);
    }
    for (const a of root.querySelectorAll('[aria-label], [title], [placeholder]')) {
      for (const name of ['aria-label', 'title', 'placeholder']) {
        if (a.getAttribute(name)) out.push(a.getAttribute(name));
      }
    }
  }
  return out.join('\\n');
}"""
# words that mark an English sentence (none of them is a Spanish word)
ENGLISH = {
    *("the", "of", "and", "is", "are", "it", "its", "to", "with", "for", "that", "this", "every", "each", "word"),
    *("words", "from", "by", "on", "at", "be", "can", "may", "not", "has", "what", "which", "an", "or", "one"),
    *("all", "only", "into", "here", "there", "their", "they", "them", "would", "will"),
}
QUOTED = re.compile(r"«[^»]*»|“[^”]*”|\"[^\"]*\"")
RUN = re.compile(r"(?:[A-Za-z][A-Za-z'’-]*[ \t]+){4,}[A-Za-z][A-Za-z'’-]*")


def english_left(text: str) -> list[str]:
    """Runs of five or more Latin words with at least two English words among them."""
    text = QUOTED.sub(" ", text.replace("\u2068", "").replace("\u2069", ""))
    return [run for run in RUN.findall(text) if sum(w.lower() in ENGLISH for w in run.split()) >= 2]


def test_the_english_sentence_finder_finds_english_and_only_english() -> None:
    assert english_left("Un modelo que lee una frase entera, como BERT para buscar.") == []
    assert english_left("«the cat ate its fish» 猫 吃了") == []
    sentence = "A model that reads a whole sentence at once"
    assert english_left(f"每个词 {sentence}") == [sentence]
    assert english_left("Capítulo: the mean of all heads") == ["the mean of all heads"]


def language_of(w: Watched) -> tuple[str, str]:
    lang, direction = w.page.evaluate("[document.documentElement.lang, document.documentElement.dir]")
    return str(lang), str(direction)


def say(code: str, key: str) -> str:
    return str(CATALOGS[code][key])


def table_reads_left_to_right(w: Watched) -> None:
    """The weights' table: columns from left to right in the order of the words, its rows' words at the left."""
    xs = w.page.evaluate(
        "[0, 1, 2, 3, 4].map((j) => document.querySelector(`[data-testid='cell-3-${j}']`).getBoundingClientRect().left)"
    )
    assert xs == sorted(xs) and len(set(xs)) == 5, xs
    row, first = w.page.evaluate(
        """[document.querySelector("[data-testid='row-3']").getBoundingClientRect().right,
            document.querySelector("[data-testid='cell-3-0']").getBoundingClientRect().left]"""
    )
    assert row <= first + 1, (row, first)
    assert w.page.evaluate("getComputedStyle(document.getElementById('matrix')).direction") == "ltr"
    assert w.page.evaluate("getComputedStyle(document.getElementById('arith-lines')).direction") == "ltr"
    assert w.page.evaluate("getComputedStyle(document.getElementById('numpy-code')).direction") == "ltr"


def mirrored(w: Watched) -> None:
    """Right to left: Back at the right of Next, the first step's button at the right of the last, the
    explanation's bar on its right side, the 3D view's axes still left to right."""
    back, nxt, first, last = w.page.evaluate(
        """['prev-step', 'next-step'].map((id) => document.getElementById(id).getBoundingClientRect().left)
            .concat([...document.querySelectorAll('#step-list button')].map((b) => b.getBoundingClientRect().left)
            .filter((_, i, all) => i === 0 || i === all.length - 1))"""
    )
    assert back > nxt and first > last, (back, nxt, first, last)
    assert w.page.evaluate("getComputedStyle(document.getElementById('explain')).borderRightWidth") == "6px"
    assert w.page.evaluate("getComputedStyle(document.getElementById('scene')).direction") == "ltr"


def room_state(base: str, code: str) -> dict[str, str]:
    with urllib.request.urlopen(f"{base}/api/rooms/{code}") as r:
        state: dict[str, str] = json.loads(r.read())["state"]
    return state


@pytest.fixture
def room(browser: Any, server: str) -> Iterator[tuple[Watched, Watched, Watched]]:
    """The teacher's projector (English), a phone whose browser speaks Spanish, a phone told ?lang=ar."""
    with ExitStack() as stack:
        teacher = stack.enter_context(watched_page(browser, server, viewport={"width": 1280, "height": 720}))
        es = stack.enter_context(watched_page(browser, server, viewport={"width": 390, "height": 844}, locale="es-MX"))
        ar = stack.enter_context(watched_page(browser, server, viewport={"width": 390, "height": 844}))
        yield teacher, es, ar


def quiz_call(base: str, method: str, path: str, body: Any = None) -> None:
    """A classroom call with the teacher's token (a presenter's right in every room)."""
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    urllib.request.urlopen(urllib.request.Request(base + path, data=data, method=method, headers=headers)).close()


def plain(text: str) -> str:
    """The text without its isolates and direction marks (U+2066…U+2069, U+200E, U+200F)."""
    return re.sub("[\u2066-\u2069\u200e\u200f]", "", text)


def test_one_room_three_languages(room: tuple[Watched, Watched, Watched]) -> None:
    """The projector in English, a phone in Spanish (its browser's language) and one in Arabic (?lang=ar) follow
    the same step and focus, each in its own words; a class question is written on each phone in its language,
    its verdicts and the reveal too; the room's state and the question's public part carry no language."""
    teacher, es, ar = room
    teacher.page.goto(
        f"{teacher.base}/?token={TOKEN}&present=1&chapter=masks&step=full&example=the-cat-ate-its-fish&focus=3"
    )
    teacher.page.wait_for_selector('[data-testid="join-code"]')
    code = teacher.text("join-code").strip()
    es.page.goto(f"{es.base}/?room={code}")
    ar.page.goto(f"{ar.base}/?room={code}&lang=ar")
    for w in (es, ar):
        w.page.wait_for_selector('[data-testid="follow-bar"][data-status="live"]')
    # a class question (a cell of the weights' grid, asked at the full mask): each phone writes it in its language
    for w in (es, ar):
        w.wait_ready(chapter="masks", step="full")
    quiz_call(teacher.base, "POST", f"/api/rooms/{code}/quiz", {"question": "masks.zero"})
    for w in (es, ar):
        w.page.wait_for_selector('[data-testid="quiz-question"]:not(:empty)')
    assert es.text("quiz-question").startswith("Activa la máscara causal (la de GPT).")
    assert plain(ar.text("quiz-question")).startswith(say("ar", "quiz.masks.zero.text")[:20])
    assert es.text("quiz-result") == "Toca una casilla."
    grid = es.page.locator('[data-testid="quiz-grid"]')
    assert grid.locator("tr").first.locator("th").all_inner_texts()[1:] == ["el", "gato", "comió", "su", "pescado"]
    assert es.page.get_by_test_id("quiz-option-4").get_attribute("aria-label") == "el → pescado"
    # the grid reads left to right in Arabic too: its first column at the left
    xs = ar.page.evaluate(
        "[0, 1, 2].map((j) => document.querySelector(`[data-testid='quiz-option-${j}']`).getBoundingClientRect().left)"
    )
    assert xs == sorted(xs) and len(set(xs)) == 3, xs
    es.page.get_by_test_id("quiz-option-4").click()
    es.page.wait_for_selector('[data-testid="quiz-result"][data-verdict="counted"]')
    assert es.text("quiz-result").startswith("Contada: elegiste «el → pescado»")
    quiz_call(teacher.base, "POST", f"/api/rooms/{code}/quiz/reveal")
    for w in (es, ar):
        w.page.wait_for_selector('[data-testid="quiz-explain"]:not(:empty)')
    assert es.text("quiz-result").startswith("¡Correcto!")
    assert es.text("quiz-explain").startswith("Todas las casillas a la derecha de la diagonal")
    assert plain(ar.text("quiz-result")).startswith("لم تُجب.")
    state = room_state(teacher.base, code)
    assert not any(re.search(r"[^\x00-\x7f]", f"{k}{v}") for k, v in state.items()), state
    quiz_call(teacher.base, "DELETE", f"/api/rooms/{code}/quiz")
    teacher.page.keyboard.press("ArrowRight")  # the causal mask
    teacher.page.keyboard.press("2")  # focus "cat"
    for w in (teacher, es, ar):
        w.wait_ready(chapter="masks", step="causal", focus="1", mask="causal")
        w.page.wait_for_selector("#step-title:not(:empty)")
    assert [language_of(w) for w in (teacher, es, ar)] == [("en", "ltr"), ("es", "ltr"), ("ar", "rtl")]
    # the same view, each in its own words: the step's title, and the focused word (Spanish carries the example)
    for w, lang in ((teacher, "en"), (es, "es"), (ar, "ar")):
        assert w.text("step-title").endswith(say(lang, "chapter.masks.causal.title"))
    assert teacher.text("num-focus") == "“cat”"
    assert es.text("num-focus") == "«gato»"
    assert plain(ar.text("num-focus")) == "«cat»"
    assert "gato" in es.text("step-text")
    assert "«cat»" in plain(ar.text("step-text"))
    # the room's state names the view only: no language, no words of any language
    state = room_state(teacher.base, code)
    assert "lang" not in state and state["focus"] == "1" and state["step"] == "causal"
    assert not any(re.search(r"[^\x00-\x7f]", f"{k}{v}") for k, v in state.items()), state

    # the phones keep their own language when the teacher moves on
    teacher.page.keyboard.press("ArrowRight")
    for w in (es, ar):
        w.wait_ready(chapter="masks", step="weights")
    assert "lang=ar" in ar.page.url and "lang" not in es.page.url
    assert language_of(ar) == ("ar", "rtl") and language_of(es) == ("es", "ltr")


def test_the_menu_keeps_the_readers_choice(watched: Watched) -> None:
    w = watched
    requests: list[str] = []
    w.page.on("request", lambda r: requests.append(r.url))
    w.goto("?chapter=masks&step=causal&focus=3")
    # an English page loads no catalog and no font: English's words are in the page's script
    assert not [u for u in requests if "/static/i18n/" in u or "/static/fonts/" in u], requests
    assert language_of(w) == ("en", "ltr")
    with w.page.expect_navigation():
        w.page.get_by_test_id("language-select").select_option("ar")
    w.wait_ready(chapter="masks", step="causal", focus="3")
    assert language_of(w) == ("ar", "rtl")
    # an English sentence typed in the Arabic page reads left to right from its start (not cut at the left)
    w.page.fill("#sentence-input", "The animal didn't cross the street because it was too tired")
    assert w.page.evaluate("document.getElementById('sentence-input').matches(':dir(ltr)')")
    assert "lang=" not in w.page.url  # the choice is kept by the browser, not put in the address
    assert w.page.evaluate("localStorage.getItem('a3d.lang')") == "ar"
    assert w.text("step-title").endswith(say("ar", "chapter.masks.causal.title"))
    # the Arabic page has Arabic's catalog and fonts, nothing of Chinese's. The fonts' style sheet is read
    # from the page itself: the reloaded page may take it from the renderer's memory cache, which shows no
    # request (once in a suite's run the sheet was drawn with no request seen)
    w.page.wait_for_load_state("networkidle")
    fetched = [u for u in requests if "/static/i18n/" in u or "/static/fonts/" in u]
    assert any("/i18n/ar.json" in u for u in fetched), fetched
    fonts = w.page.evaluate(
        "(() => { const l = document.querySelector('link[data-fonts]');"
        " return l && l.sheet ? [l.dataset.fonts, l.sheet.cssRules.length] : null })()"
    )
    assert fonts is not None and fonts[0] == "ar" and fonts[1] > 0, fonts
    assert not any("zh" in u.rsplit("/", 1)[-1] for u in fetched), fetched
    # the next page of this browser opens in Arabic (the server writes it so: no English first)
    w.page.goto(f"{w.base}/?chapter=masks&step=full")
    assert w.page.evaluate("document.documentElement.getAttribute('dir')") == "rtl"
    w.wait_ready(chapter="masks")
    # a link's ?lang= wins for that page, and stays in its address as the view changes
    w.goto("?chapter=masks&step=full&lang=es")
    assert language_of(w) == ("es", "ltr")
    w.page.keyboard.press("ArrowRight")
    w.wait_ready(step="causal")
    assert "lang=es" in w.page.url
    # the server's refusal in the page's words: an order that is no permutation (its type and ctx, api.js)
    w.expect_console_error("status of 422")
    w.page.goto(f"{w.base}/?chapter=positions&step=plain&order=0%200%201%202%203&lang=es")
    banner = w.page.locator("#chapter-error:not([hidden])")
    banner.wait_for(timeout=30_000)
    assert say("es", "error.type.not_a_permutation").replace("{last}", "4") in banner.inner_text()


def test_fonts_are_subset_and_licensed() -> None:
    fonts = ROOT / "static" / "fonts"
    if not (fonts / "ar.css").exists():
        pytest.skip("the fonts are not built (make setup: scripts/fonts.py)")
    for code, package in (("ar", "noto-sans-arabic"), ("zh", "noto-sans-sc")):
        assert "SIL OPEN FONT LICENSE" in (fonts / f"{package}-LICENSE.txt").read_text("utf-8").upper()
        css = (fonts / f"{code}.css").read_text("utf-8")
        files = re.findall(r'url\("([^"]+\.woff2)"\)', css)
        assert len(files) == 2  # regular and bold
        for name in files:
            assert Path(fonts / name).stat().st_size < 200 * 1024  # a subset, not the whole font
        # every character of the catalog in that script is in the font's range
        block = (0x0600, 0x06FF) if code == "ar" else (0x4E00, 0x9FFF)
        used = {c for c in "".join(CATALOGS[code].values()) if block[0] <= ord(c) <= block[1]}
        ranges = re.findall(r"U\+([0-9A-F]+)(?:-([0-9A-F]+))?", css.split("unicode-range:")[1].split(";")[0])
        covered = {p for a, b in ranges for p in range(int(a, 16), int(b or a, 16) + 1)}
        assert {ord(c) for c in used} <= covered


def test_an_exported_view_keeps_its_language(watched: Watched, browser: Any, tmp_path: Path) -> None:
    """The HTML file of a Spanish page opens offline in Spanish: its lang, its words and its numbers."""
    w = watched
    w.goto("?chapter=masks&step=weights&focus=3&lang=es")
    with w.page.expect_download() as info:
        w.page.get_by_test_id("export-html").click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    with offline_page(browser, path) as page:
        assert page.evaluate("document.documentElement.lang") == "es"
        assert page.locator("#mask-full").inner_text() == say("es", "page.mask.full")
        caption = page.locator("#matrix caption").inner_text()
        assert say("es", "table.note.rows") in caption, caption
        assert re.fullmatch(r"\d,\d{3}", page.locator('[data-testid="cell-3-1"]').inner_text())  # a decimal comma
        assert page.locator('[data-testid="row-3"]').inner_text().endswith("su")  # the example's Spanish words
