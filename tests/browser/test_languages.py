"""The page in Spanish, Chinese and Arabic (issue 43): the parts in the catalogs so far (the top bar, the
attention view, the masks chapter, the exports; chapters/CONTRACT.md "Words in every language").

- The masks chapter, every step, on a projector (1280×720, the presenter's view) and a phone
  (390×844, its language from the browser's own): the document's lang and dir, no English sentence
  left in the converted panels, nothing cut (test_projector.py's check), nothing wider than a phone.
- In Arabic the document is right to left, the steps bar mirrored, and the tables of numbers read
  left to right; Arabic words are drawn with the app's own font.
- axe-core finds nothing at WCAG A/AA in each language.
- One room: the projector in English, a phone in Spanish and one in Arabic, on the same step and focus;
  the room's state has no language in it.
- The menu keeps the reader's choice; an English page loads no catalog and no font.
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
from tests.browser.helpers import next_frames, offline_page
from tests.browser.test_projector import CUT, TOKEN, settle

pytestmark = pytest.mark.browser

I18N = ROOT / "static" / "i18n"
CATALOGS = {c: json.loads((I18N / f"{c}.json").read_text("utf-8")) for c in ("en", "es", "zh", "ar")}
LANGS = {"es": ("es", "ltr", "es-ES"), "zh": ("zh-Hans", "ltr", "zh-CN"), "ar": ("ar", "rtl", "ar-EG")}
STEPS = ["full", "causal", "weights", "difference"]

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
  const skip = 'code, pre, kbd, .tok, .wr-prompt, .wr-tok, .arith-key, .label, option:not(:checked), th[scope="row"], [aria-hidden="true"]';
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


def words_of(w: Watched) -> str:
    text: str = w.page.evaluate(VISIBLE_WORDS, PANELS)
    return text


def say(code: str, key: str) -> str:
    return str(CATALOGS[code][key])


def at_step(w: Watched, step: str) -> None:
    w.page.wait_for_selector(f'#app[data-ready="true"][data-chapter="masks"][data-step="{step}"]', timeout=60_000)
    w.page.wait_for_selector("#step-title:not(:empty)")
    next_frames(w.page)


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


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_masks_chapter_on_the_projector(browser: Any, server: str, lang: str) -> None:
    """The teacher's projector view (1280×720) in `lang`: every step whole, its words in the language."""
    with watched_page(browser, server, viewport={"width": 1280, "height": 720}) as w:
        w.page.goto(
            f"{server}/?token={TOKEN}&present=1&chapter=masks&step=full&example=the-cat-ate-its-fish&focus=3&lang={lang}"
        )
        w.page.wait_for_selector('[data-testid="join-qr"]')
        problems: list[str] = []
        for i, step in enumerate(STEPS):
            if i:
                w.page.keyboard.press("ArrowRight")
            at_step(w, step)
            settle(w)
            assert language_of(w) == LANGS[lang][:2]
            title = say(lang, f"chapter.masks.{step}.title")
            assert w.text("step-title").endswith(title), (w.text("step-title"), title)
            problems += [f"{step}: English left: {run!r}" for run in english_left(words_of(w))]
            cut = w.page.evaluate(CUT)
            if cut:
                problems.append(f"{step}: cut {cut}")
            if lang == "ar" and step == "weights":
                table_reads_left_to_right(w)
        assert not problems, "\n".join(problems)


# On a phone the page scrolls down; nothing may be wider than the screen, cut by an ellipsis or cut off
# at the side (a table scrolls sideways in its own box).
PHONE_CUT = """() => {
  const bad = [];
  const vw = innerWidth;
  const wide = document.documentElement.scrollWidth;
  if (wide > vw + 1) bad.push(['page scrolls sideways', wide]);
  const walker = document.createTreeWalker(document.getElementById('app'), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const e = node.parentElement;
    if (!node.textContent.trim() || !e.getClientRects().length) continue;
    if (e.closest('.table-wrap, .compare-tables, .overview-grid, pre, #scene')) continue;  // they scroll sideways
    const cs = getComputedStyle(e);
    if (cs.visibility === 'hidden' || cs.clipPath !== 'none') continue;  // hidden, or for screen readers only
    const text = node.textContent.trim();
    const name = e.id || e.className;
    if (cs.textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + 1) bad.push(['ellipsis', name, text]);
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width >= 1 && (r.left < -1 || r.right > vw + 1)) bad.push(['off the side', name, text.slice(0, 40)]);
    }
  }
  return bad.slice(0, 8);
}"""


@pytest.mark.parametrize("lang", list(LANGS))
def test_the_masks_chapter_on_a_phone_in_the_browsers_language(browser: Any, server: str, lang: str) -> None:
    """A phone (390×844) whose browser speaks `lang`: the page opens in it with nothing asked."""
    with watched_page(browser, server, viewport={"width": 390, "height": 844}, locale=LANGS[lang][2]) as w:
        w.page.goto(f"{server}/?chapter=masks&step=full&example=the-cat-ate-its-fish&focus=3")
        problems: list[str] = []
        for i, step in enumerate(STEPS):
            if i:
                w.page.get_by_test_id("next-step").click()
            at_step(w, step)
            assert language_of(w) == LANGS[lang][:2]
            problems += [f"{step}: English left: {run!r}" for run in english_left(words_of(w))]
            cut = w.page.evaluate(PHONE_CUT)
            if cut:
                problems.append(f"{step}: cut {cut}")
            if lang == "ar" and step == "weights":
                mirrored(w)
        assert not problems, "\n".join(problems)
        if lang == "ar":
            # Arabic is drawn with the app's font (its glyphs join by the font's shaping features), loaded first
            assert w.page.evaluate("document.fonts.check('700 16px \"A3D Noto Sans Arabic\"', 'الانتباه')")
            used = w.page.evaluate("getComputedStyle(document.getElementById('step-text')).fontFamily")
            assert used.startswith('"A3D Noto Sans Arabic"'), used


@pytest.mark.parametrize("lang", list(LANGS))
def test_no_axe_violation_in_each_language(browser: Any, server: str, lang: str) -> None:
    from tests.browser.test_axe import AXE, _violations

    if not AXE.exists():
        pytest.skip("axe-core is not installed (npm ci)")
    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True, reduced_motion="reduce")
    page = context.new_page()
    page.base = server
    try:
        query = f"?chapter=masks&step=difference&focus=3&lang={lang}"
        assert _violations(page, query, '#app[data-ready="true"] #step-text:not(:empty)') == []
    finally:
        context.close()


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


def test_one_room_three_languages(room: tuple[Watched, Watched, Watched]) -> None:
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
    assert ar.text("num-focus").replace("\u2068", "").replace("\u2069", "") == "«cat»"
    assert "gato" in es.text("step-text")
    assert "«cat»" in ar.text("step-text").replace("\u2068", "").replace("\u2069", "")
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
    assert "lang=" not in w.page.url  # the choice is kept by the browser, not put in the address
    assert w.page.evaluate("localStorage.getItem('a3d.lang')") == "ar"
    assert w.text("step-title").endswith(say("ar", "chapter.masks.causal.title"))
    # the Arabic page fetched Arabic's catalog and fonts, nothing of Chinese's
    fetched = [u for u in requests if "/static/i18n/" in u or "/static/fonts/" in u]
    assert any("/i18n/ar.json" in u for u in fetched) and any("/fonts/ar.css" in u for u in fetched)
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
