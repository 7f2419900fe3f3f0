"""The classroom and the chapter "Look inside" in Spanish, Chinese and Arabic (issue 43), in one room: the
projector in English (1280×720), phones (390×844) whose browsers speak Spanish and Chinese, a phone told ?lang=ar.

- Each phone's bar (the room, "● live", Explore on my own) and the notes the teacher's H and B bring are in
  the phone's own language; the projector's join panel stays English; no English sentence of five words or
  more is left in a phone's classroom bar and notes.
- The teacher walks the five steps of "Look inside"; on each step every phone shows it in its language:
  no English sentence of five words or more in the chapter's title, text, panel, numbers and steps bar
  (quoted words and code excepted), nothing cut or wider than the phone; Arabic is dir=rtl with its tables
  left to right, and the prompt the model reads, quoted in its sentences, reads in order where the line
  wraps inside it (its words isolated, its quotation marks the Arabic sentence's).

- A projector told its language by the address (?lang=es): the teacher's window Present opens is in it too.

One page per language (the phones), the projector driving them; LANG_SHOTS=<folder> keeps screenshots.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.browser.chapters import wait
from tests.browser.conftest import Watched, watched_page
from tests.browser.test_languages import VISIBLE_WORDS, english_left, language_of, say
from tests.browser.test_languages_lesson import ENGLISH_RUNS_ISOLATED, PHONE_CUT, QUOTES_READ_RIGHT
from tests.browser.test_projector import TOKEN

pytestmark = pytest.mark.browser

STEPS = ["rollout", "flow", "off", "lens", "compare"]
ISOLATES = str.maketrans("", "", "\u2066\u2067\u2068\u2069\u200e\u200f")
# a phone's classroom parts, and the chapter's (its 3D labels are tokens, its code panel Python)
ROOM_PARTS = ["[data-testid=follow-bar]", "[data-testid=numbers-hidden-note]", "[data-testid=follower-blank]"]
CHAPTER_PARTS = ["#chapter-title", "#chapter-text", "#chapter-panel", "#lesson-numbers", "#stepper .step-list"]
SHOTS = os.environ.get("LANG_SHOTS")


def plain(text: str) -> str:
    return text.translate(ISOLATES).strip()


def shot(w: Watched, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        w.page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def words(w: Watched, parts: list[str]) -> str:
    text: str = w.page.evaluate(VISIBLE_WORDS, parts)
    return text


@pytest.fixture
def room(browser: Any, server: str) -> Iterator[tuple[Watched, Watched, Watched, Watched]]:
    phone = {"width": 390, "height": 844}
    with ExitStack() as stack:
        teacher = stack.enter_context(watched_page(browser, server, viewport={"width": 1280, "height": 720}))
        es = stack.enter_context(watched_page(browser, server, viewport=phone, locale="es-ES"))
        zh = stack.enter_context(watched_page(browser, server, viewport=phone, locale="zh-CN"))
        ar = stack.enter_context(watched_page(browser, server, viewport=phone))
        yield teacher, es, zh, ar


def test_a_room_and_look_inside_in_each_phones_language(room: tuple[Watched, Watched, Watched, Watched]) -> None:
    teacher, es, zh, ar = room
    phones = {"es": es, "zh": zh, "ar": ar}
    teacher.page.goto(f"{teacher.base}/?token={TOKEN}&present=1&chapter=inside&step=rollout")
    teacher.page.wait_for_selector('[data-testid="join-code"]')
    code = teacher.text("join-code").strip()
    es.page.goto(f"{es.base}/?room={code}")
    zh.page.goto(f"{zh.base}/?room={code}")
    ar.page.goto(f"{ar.base}/?room={code}&lang=ar")
    for w in phones.values():
        w.page.wait_for_selector('[data-testid="follow-bar"][data-status="live"][data-following="true"]')
        wait(w, "rollout")
    assert (
        language_of(es) == ("es", "ltr") and language_of(zh) == ("zh-Hans", "ltr") and language_of(ar) == ("ar", "rtl")
    )

    # the bars: each phone in its own words, the projector's join panel in the teacher's
    teacher.page.wait_for_selector('[data-testid="presenter-status"][data-status="live"]')
    assert teacher.text("presenter-status") == say("en", "classroom.present.link.live")
    for lang, w in phones.items():
        assert plain(w.text("follow-status")) == f"● {say(lang, 'classroom.follow.status.live')}"
        assert plain(w.text("follow-toggle")) == say(lang, "classroom.follow.explore")
        room_label = plain(w.page.locator("[data-testid=follow-bar] .cr-room").inner_text())
        assert room_label == say(lang, "classroom.follow.room").replace("{code}", code)
    # H: the numbers hidden on every phone, said in its language; then B: the screen paused
    teacher.page.keyboard.press("h")
    for lang, w in phones.items():
        w.page.wait_for_selector('[data-testid="numbers-hidden-note"]:visible')
        assert plain(w.text("numbers-hidden-note")) == say(lang, "classroom.follow.hidden")
        assert english_left(words(w, ROOM_PARTS)) == [], lang
    shot(ar, "room-ar-hidden")
    teacher.page.keyboard.press("h")
    teacher.page.keyboard.press("b")
    for lang, w in phones.items():
        w.page.wait_for_selector('[data-testid="follower-blank"]:visible')
        assert plain(w.text("follower-blank")) == say(lang, "classroom.follow.blank")
        assert english_left(words(w, ROOM_PARTS)) == [], lang
    teacher.page.keyboard.press("b")
    for w in phones.values():
        w.page.wait_for_selector('[data-testid="follower-blank"]', state="hidden")

    # Look inside, step by step, as the teacher moves: every phone in its language
    for i, step in enumerate(STEPS):
        if i:
            teacher.page.keyboard.press("ArrowRight")
        for lang, w in phones.items():
            wait(w, step)
            assert say(lang, f"chapter.inside.{step}.title") in plain(w.text("chapter-title")), (lang, step)
            left = english_left(words(w, CHAPTER_PARTS))
            assert left == [], (lang, step, left)
            assert language_of(w)[1] == ("rtl" if lang == "ar" else "ltr")
            cut = w.page.evaluate(PHONE_CUT)
            assert not cut, (lang, step, cut)
        out_of_order = ar.page.evaluate(f"() => [...({ENGLISH_RUNS_ISOLATED})(), ...({QUOTES_READ_RIGHT})()]")
        assert out_of_order == [], (step, out_of_order)
        shot(ar, f"inside-ar-{step}")
        shot(es, f"inside-es-{step}")
        if step == "rollout":  # Arabic: the table of numbers still reads left to right
            assert ar.page.evaluate("getComputedStyle(document.querySelector('.inside-table')).direction") == "ltr"
            caption = plain(ar.page.locator("[data-testid=inside-rollout-table] caption").inner_text())
            assert caption.startswith("كم من"), caption
    # the room's state names the view only: the phones are still following, in their own languages
    assert "lang=ar" in ar.page.url and "lang" not in es.page.url and "lang" not in zh.page.url
    assert (
        language_of(ar) == ("ar", "rtl") and language_of(es) == ("es", "ltr") and language_of(zh) == ("zh-Hans", "ltr")
    )


def test_the_teachers_window_speaks_the_projectors_language(browser: Any, server: str) -> None:
    """A projector told its language by the address (?lang=es, not the menu): Present opens the teacher's
    window in Spanish too, its address naming the language as the projector's does."""
    with watched_page(browser, server, viewport={"width": 1280, "height": 720}) as projector:
        projector.page.goto(f"{projector.base}/?token={TOKEN}&lang=es")
        projector.wait_ready()
        with projector.page.context.expect_page() as opened:
            projector.page.get_by_test_id("present").click()
        window = opened.value
        window.wait_for_selector("[data-testid=teacher-status]:has-text('·')")
        assert "lang=es" in window.url  # (the window writes its view into its address, as every page does)
        assert window.evaluate("document.documentElement.lang") == "es"
        status = plain(window.get_by_test_id("teacher-status").inner_text())
        assert status.startswith("Sala ") and say("es", "classroom.teacher.state.live") in status, status
        assert plain(window.get_by_test_id("teacher-next").inner_text()) == say("es", "classroom.teacher.next")
        window.close()
