"""The teacher's small tools and a student's way in, in Chromium against a real server:

- the home page's "Join a room" box: a code in any case, with spaces or dashes, lands in the room; a code
  that names no room is answered in the box; the box is not on a follower's or the teacher's page;
- a student's page has no Present button (the teacher's has);
- views recorded for a lesson survive a reload (a draft kept in the browser until saved or discarded);
- the Lessons panel, the Room menu and the chapter menu: one open at a time, none over another's buttons;
- a phone (390×844, touch): the step's words come first, before the 3D view (also on a follower's page,
  under its room bar), and Back / Next sit on an opaque strip across the foot of the screen that no
  line of text is ever half under.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import Watched, watched_page
from tests.browser.test_classroom import params, presenter, wait_params
from tests.classroom.conftest import TOKEN, app_process

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def tools_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with app_process(tmp_path_factory.mktemp("tools"), ATTENTION_VOTES_PER_ADDRESS="0") as (base, _):
        yield base


@pytest.fixture
def page(browser: Any, tools_server: str) -> Iterator[Watched]:
    with watched_page(browser, tools_server) as w:
        yield w


def visible(w: Watched, testid: str) -> bool:
    return bool(w.page.get_by_test_id(testid).is_visible())


# ---- a student's way in ------------------------------------------------------------------------


def test_a_page_that_was_told_nothing_still_joins_without_its_script(browser: Any, tools_server: str) -> None:
    """The box is a plain form: GET /?room=code works even where the page's script never ran."""
    context = browser.new_context(java_script_enabled=False)
    try:
        p = context.new_page()
        p.goto(tools_server + "/")
        form = p.locator("#join-form")
        assert form.get_attribute("action") == "/" and form.get_attribute("method") == "get"
        assert p.locator("#join-code").get_attribute("name") == "room"
    finally:
        context.close()


# ---- recorded views survive a reload ----------------------------------------------------------------


def test_recorded_views_are_a_draft_until_saved(page: Watched) -> None:
    w = page
    w.page.on("dialog", lambda d: d.accept())
    w.page.goto(f"{w.base}/?token={TOKEN}&example=the-cat-ate-its-fish&step=score&focus=3")
    w.wait_ready(step="score")
    w.page.locator("[data-testid=lessons] summary").click()
    for step, note in (("score", "first the scores"), ("softmax", "then the weights")):
        w.page.goto(f"{w.base}/?example=the-cat-ate-its-fish&step={step}&focus=3")  # a reload each time
        w.wait_ready(step=step)
        w.page.locator("[data-testid=lessons] summary").click()
        w.page.get_by_test_id("lesson-note").fill(note)
        w.page.get_by_test_id("lesson-add").click()
    w.page.get_by_test_id("lesson-title").fill("Scores, then weights")
    w.page.reload()  # the page goes away with two views recorded and a title typed
    w.wait_ready()
    w.page.locator("[data-testid=lessons] summary").click()
    assert w.text("lesson-status") == "2 views recorded: a draft kept in this browser until you save it."
    assert w.page.get_by_test_id("lesson-title").input_value() == "Scores, then weights"
    assert visible(w, "lesson-discard")
    w.page.get_by_test_id("lesson-save").click()
    w.page.wait_for_selector('[data-testid="lesson-status"]:has-text("Saved as lesson")')
    lesson_id = w.text("lesson-status").split("lesson ")[1].rstrip(".")
    request = urllib.request.Request(f"{w.base}/api/lessons/{lesson_id}", headers={"authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request) as r:
        saved = json.loads(r.read())
    assert saved["title"] == "Scores, then weights"
    assert [(v["state"]["step"], v["note"]) for v in saved["views"]] == [
        ("score", "first the scores"),
        ("softmax", "then the weights"),
    ]
    w.page.reload()  # saved: no draft left
    w.wait_ready()
    w.page.locator("[data-testid=lessons] summary").click()
    assert w.text("lesson-status") == "" and not visible(w, "lesson-discard")
    assert w.page.evaluate("localStorage.getItem('a3d.lesson-draft')") is None
    w.page.get_by_test_id("lesson-add").click()  # one more, then thrown away
    assert w.text("lesson-status").startswith("1 view recorded")
    w.page.get_by_test_id("lesson-discard").click()
    assert w.text("lesson-status") == "The draft is discarded."
    w.page.reload()
    w.wait_ready()
    w.page.locator("[data-testid=lessons] summary").click()
    assert w.text("lesson-status") == ""


# ---- panels never cover each other (checked in the class walk at the end) --------------------------

UNCOVERED = """(testid) => {
  const b = document.querySelector(`[data-testid="${testid}"]`);
  const r = b.getBoundingClientRect();
  const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return at === b || b.contains(at);
}"""


# ---- a phone: the words first, Back / Next on a strip of their own -------------------------------------

# The strip across the foot of the screen (body::after), the buttons on it, and each line of the step's
# words: [top, bottom, left, right] as the screen shows them.
PHONE_FOOT = """(explain) => {
  const strip = getComputedStyle(document.body, '::after');
  const lines = [];
  const walker = document.createTreeWalker(document.querySelector(explain), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const range = document.createRange();
    range.selectNodeContents(walker.currentNode);
    for (const r of range.getClientRects()) if (r.width > 0) lines.push([r.top, r.bottom, r.left, r.right]);
  }
  const box = (id) => {
    const r = document.getElementById(id).getBoundingClientRect();
    return [r.top, r.bottom, r.left, r.right];
  };
  return {
    stripTop: innerHeight - parseFloat(strip.height), stripColor: strip.backgroundColor,
    stripLeft: strip.left, stripRight: strip.right, position: strip.position,
    buttons: ['prev-step', 'next-step'].filter((id) => document.getElementById(id).getClientRects().length).map(box),
    lines, height: innerHeight,
  };
}"""


def assert_nothing_half_under_the_strip(w: Watched, explain: str) -> None:
    """At every scroll position down the page: the buttons are on the strip, and a line of the step's
    words is above the strip or behind it, never both (a line half covered by a button or the strip)."""
    total = w.page.evaluate("document.documentElement.scrollHeight")
    for y in range(0, total, 97):
        w.page.evaluate(f"window.scrollTo(0, {y})")
        foot = w.page.evaluate(PHONE_FOOT, explain)
        assert foot["position"] == "fixed" and foot["stripColor"] == "rgb(251, 251, 248)"  # opaque, full width
        assert foot["stripLeft"] == "0px" and foot["stripRight"] == "0px"
        top = foot["stripTop"]
        for button in foot["buttons"]:
            assert button[0] >= top - 0.5 and button[1] <= foot["height"], (button, top)
        for line in foot["lines"]:
            assert line[1] <= top + 0.5 or line[0] >= top - 0.5, (y, line, top)
    w.page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")  # the page's end clears it
    end = w.page.evaluate("document.querySelector('.foot').getBoundingClientRect().bottom")
    assert end <= w.page.evaluate(PHONE_FOOT, explain)["stripTop"] + 0.5, end


@pytest.fixture
def phone(browser: Any, tools_server: str) -> Iterator[Watched]:
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, reduced_motion="reduce", has_touch=True, is_mobile=True
    )
    page = context.new_page()
    w = Watched(page=page, base=tools_server)
    page.on("pageerror", lambda e: w.errors.append(str(e)))
    try:
        yield w
    finally:
        context.close()
    assert not w.errors, w.errors


@pytest.mark.parametrize(
    "query",
    [
        "example=the-cat-ate-its-fish&step=score&focus=3",
        "chapter=writing",
        pytest.param("chapter=rnn", marks=pytest.mark.full),  # the same chapter layout as Write's
        pytest.param("chapter=scaling", marks=pytest.mark.full),
    ],
)
def test_a_phone_reads_the_words_first(phone: Watched, query: str) -> None:
    phone.goto("?" + query)
    attention = phone.page.locator('#app[data-layout="attention"]').count() > 0
    explain = "#explain" if attention else "#chapter-view .explain"
    view = "#scene" if attention else "#chapter-stage"
    if not attention:
        phone.page.wait_for_selector("#chapter-text:not(:empty)")
    words, figure = phone.page.evaluate(
        "([a, b]) => [a, b].map((s) => document.querySelector(s).getBoundingClientRect())"
        ".map((r) => [r.top, r.bottom])",
        [explain, view],
    )
    assert words[0] <= 420, words  # the words start high on the first screen (they started 590-804 px down)
    assert words[1] <= figure[0], (words, figure)  # then the 3D view they speak of
    title_bottom = phone.page.evaluate(f"document.querySelector('{explain} h2').getBoundingClientRect().bottom")
    assert title_bottom <= phone.page.evaluate(PHONE_FOOT, explain)["stripTop"]  # its title in sight at once
    assert_nothing_half_under_the_strip(phone, explain)


# ---- one class: a student joins by the code, reads the words first; the teacher's panels take turns ------


def test_a_student_joins_by_the_code_and_reads_first_while_the_teachers_panels_take_turns(
    page: Watched, phone: Watched
) -> None:
    teacher, student = page, phone
    teacher.page.set_viewport_size({"width": 1280, "height": 720})
    code = presenter(teacher, query="example=the-cat-ate-its-fish&step=softmax&focus=3")
    assert visible(teacher, "present") and teacher.page.get_by_test_id("join-form").count() == 0  # no box there

    # the home page's box, up top and on screen on a laptop and on a phone; no Present for a student
    for size in ((1280, 720), (390, 844)):
        student.page.set_viewport_size({"width": size[0], "height": size[1]})
        if size[0] == 1280:
            student.goto()
        box = student.page.get_by_test_id("join-form").bounding_box()
        assert box is not None and box["x"] + box["width"] <= size[0] and box["y"] < 250, (size, box)
    assert visible(student, "join-form") and not visible(student, "present")
    student.page.get_by_test_id("join-code-input").fill("zz-zz zz")  # a code of no room: said in the box
    student.page.get_by_test_id("join-go").click()
    student.page.wait_for_selector('[data-testid="join-said"]:has-text("There is no room ZZZZZZ")')
    assert student.page.get_by_test_id("join-code-input").get_attribute("aria-invalid") == "true"
    assert "room=" not in student.page.url and student.page.get_by_test_id("follow-bar").count() == 0
    typed = f"{code[:3].lower()} {code[3:].lower()}"  # as a student types what the projector shows
    student.page.get_by_test_id("join-code-input").fill(typed)
    student.page.get_by_test_id("join-code-input").press("Enter")
    student.page.wait_for_selector('[data-testid="follow-bar"][data-status="live"]', timeout=30_000)
    assert student.text("follow-bar").startswith(f"Room {code}")
    wait_params(student, step="softmax", focus="3")
    assert student.page.get_by_test_id("join-form").count() == 0  # in the room: no box

    # the follower's phone: the step's words under the room bar, before the 3D view, whole at once
    student.page.wait_for_selector('[data-testid="follow-status"]:has-text("live")')
    words, figure = student.page.evaluate(
        "['explain', 'scene'].map((id) => document.getElementById(id).getBoundingClientRect())"
        ".map((r) => [r.top, r.bottom])"
    )
    assert words[0] <= 480 and words[1] <= figure[0], (words, figure)
    foot = student.page.evaluate(PHONE_FOOT, "#explain")
    assert words[1] <= foot["stripTop"], (words, foot["stripTop"])  # the softmax step's words whole, at once
    assert_nothing_half_under_the_strip(student, "#explain")
    assert params(student)["step"] == "softmax"

    # the teacher's Lessons panel, Room menu and chapter menu: one open at a time, none over another's buttons
    def shown() -> tuple[bool, bool, bool]:
        """(Lessons open, Room open, the chapter menu shown) once the panels' toggle events have run."""
        teacher.page.evaluate("() => new Promise((r) => setTimeout(r, 50))")  # a <details>' toggle event is a task
        got: list[bool] = teacher.page.evaluate(
            """() => [document.querySelector('[data-testid=lessons]').open,
                document.querySelector('[data-testid=room-menu]').open,
                !document.getElementById('contents').hidden]"""
        )
        return got[0], got[1], got[2]

    lessons = teacher.page.locator("[data-testid=lessons] summary")
    room = teacher.page.locator("[data-testid=room-menu] summary")
    lessons.click()
    assert shown() == (True, False, False)
    room.click()  # the Room menu opens: the Lessons panel closes
    assert shown() == (False, True, False)
    assert teacher.page.evaluate(UNCOVERED, "room-close"), "something lies over 'Close the room'"
    lessons.click()
    assert shown() == (True, False, False)
    assert teacher.page.evaluate(UNCOVERED, "lesson-save")
    teacher.page.get_by_test_id("chapters-toggle").click()  # the chapter menu: the panels close
    assert shown() == (False, False, True)
    room.click()  # and a panel closes the chapter menu
    assert shown() == (False, True, False)
    assert teacher.page.evaluate(UNCOVERED, "room-close")
