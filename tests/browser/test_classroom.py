"""The classroom in Chromium: a presenter page and two follower pages on a server of our own
(known teacher token, its own data directory): following, the quiz, the token rules, the
projector view, reconnection after a restart, and a follower's phone."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Watched, watched_page
from tests.classroom.conftest import TOKEN, app_process
from tests.servers import free_port

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def classroom_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # several followers (pages) from one address: each page's vote counts (a school's NAT does the same)
    with app_process(tmp_path_factory.mktemp("classroom"), ATTENTION_VOTES_PER_ADDRESS="0") as (base, _):
        yield base


def presenter(w: Watched, token: str = TOKEN, query: str = "") -> str:
    """Open the teacher link (at the view `query`), press Present; the room's code."""
    w.page.goto(f"{w.base}/?token={token}" + (f"&{query}" if query else ""))
    w.wait_ready()
    with w.page.context.expect_page() as teachers_window:  # Present opens the teacher's window beside it
        w.page.get_by_test_id("present").click()
    teachers_window.value.close()  # (tests/browser/test_quiz.py has both windows)
    w.page.wait_for_selector('[data-testid="join-address"]')
    address = w.text("join-address")
    return address.split("room=")[1].strip()


def follower(w: Watched, code: str) -> None:
    w.page.goto(f"{w.base}/?room={code}")
    w.wait_ready()
    w.page.wait_for_selector('[data-testid="follow-bar"][data-status="live"]')


def params(w: Watched) -> dict[str, str]:
    query: str = w.page.evaluate("location.search")
    return dict(urllib.parse.parse_qsl(query.lstrip("?")))


def wait_params(w: Watched, seconds: float = 10, **expected: str) -> None:
    deadline = time.monotonic() + seconds
    while True:
        got = params(w)
        if all(got.get(k) == v for k, v in expected.items()):
            return
        assert time.monotonic() < deadline, f"{got} never showed {expected}"
        time.sleep(0.05)


def count(w: Watched, n: int) -> None:
    w.page.wait_for_selector(f'[data-testid="follower-count"][data-count="{n}"]', timeout=10_000)


@pytest.fixture
def three(browser: Any, classroom_server: str) -> Iterator[tuple[Watched, Watched, Watched]]:
    with ExitStack() as stack:
        pages = tuple(stack.enter_context(watched_page(browser, classroom_server)) for _ in range(3))
        yield pages  # type: ignore[misc]


def test_followers_follow_step_mask_focus_and_sentence(three: tuple[Watched, Watched, Watched]) -> None:
    teacher, a, b = three
    code = presenter(teacher)
    follower(a, code)
    follower(b, code)
    count(teacher, 2)
    # the presenter starts at "its" (focus 3); the followers go there
    for w in (a, b):
        wait_params(w, example="the-cat-ate-its-fish", step="score", focus="3")
    teacher.page.keyboard.press("ArrowRight")  # scale
    teacher.page.keyboard.press("ArrowRight")  # mask
    for w in (a, b):
        wait_params(w, step="mask")
    teacher.page.keyboard.press("m")
    teacher.page.keyboard.press("2")  # focus "cat"
    for w in (a, b):
        wait_params(w, step="mask", mask="causal", focus="1")
        w.wait_ready(step="mask")
    assert a.text("step-title") == teacher.text("step-title")
    # a sentence for the real model
    sentence = "the dog chased its ball"
    teacher.page.get_by_test_id("present").click()  # leave the projector view: the room stays open
    teacher.page.get_by_test_id("sentence-input").fill(sentence)
    teacher.page.get_by_test_id("sentence-input").press("Enter")
    for w in (a, b):
        wait_params(w, sentence=sentence)
    # explore, then follow again
    a.page.get_by_test_id("follow-toggle").click()
    assert a.page.get_by_test_id("follow-bar").get_attribute("data-following") == "false"
    teacher.page.get_by_test_id("example-select").select_option("the-cat-ate-its-fish")
    wait_params(b, example="the-cat-ate-its-fish")
    time.sleep(0.5)
    assert params(a).get("sentence") == sentence  # exploring: a stays where it was
    a.page.get_by_test_id("follow-toggle").click()
    wait_params(a, example="the-cat-ate-its-fish")


@pytest.fixture
def class_of_four(browser: Any, classroom_server: str) -> Iterator[tuple[Watched, Watched, Watched, Watched]]:
    """A presenter at a projector (1280×720), two phones (390×844) and a laptop (1280×800)."""
    with ExitStack() as stack:
        pages = tuple(stack.enter_context(watched_page(browser, classroom_server)) for _ in range(4))
        pages[0].page.set_viewport_size({"width": 1280, "height": 720})
        for phone in pages[1:3]:
            phone.page.set_viewport_size({"width": 390, "height": 844})
        yield pages  # type: ignore[misc]


# every weight of the cat example (softmax, full mask) and the outputs z of "its": none may show
WEIGHTS_OF_ITS = ["0.895", "0.013", "0.026", "0.053"]
STRONG = ["0.785", "0.738", "0.685", "0.837"]  # the other rows' strongest weights
OUTPUTS_OF_ITS = ["0.903", "0.059"]


def shown_text(w: Watched) -> str:
    """What the page shows as text (innerText leaves out what is not rendered)."""
    text: str = w.page.evaluate("document.body.innerText")
    return text


def link_widths(w: Watched) -> list[float]:
    widths: str = w.page.locator("#scene").get_attribute("data-link-widths") or ""
    return [float(x) for x in widths.split()]


def assert_withheld(w: Watched, why: str) -> None:
    w.page.wait_for_selector(f'body.cr-withheld[data-withheld~="{why}"]')
    w.page.wait_for_selector('#scene[data-withheld="true"]', timeout=10_000)
    text = shown_text(w)
    for number in WEIGHTS_OF_ITS + STRONG + OUTPUTS_OF_ITS:
        assert number not in text, f"{number} shows while the weights are withheld ({why})"
    widths = [r for r in link_widths(w) if r > 0]
    assert widths and max(widths) - min(widths) < 1e-3, f"3D links still differ in width: {widths}"
    for testid in ("export-bar", "arith", "lesson-numbers"):
        assert not w.page.get_by_test_id(testid).is_visible(), f"{testid} shows while withheld"


def test_a_quiz_withholds_every_weight_on_every_page(class_of_four: tuple[Watched, Watched, Watched, Watched]) -> None:
    teacher, phone_a, phone_b, laptop = class_of_four
    code = presenter(teacher, query="example=the-cat-ate-its-fish&step=softmax&mask=full&focus=3")
    for w in (phone_a, phone_b, laptop):
        follower(w, code)
        w.wait_ready(step="softmax", focus="3")
    count(teacher, 3)
    assert "0.895" in shown_text(laptop)  # before the question: the weights are there
    teacher.page.get_by_test_id("quiz-ask").click()
    for w in (teacher, phone_a, phone_b, laptop):
        if w is not teacher:
            w.page.wait_for_selector('[data-testid="quiz-option-3"]')
            assert "the attention of “its” goes to “cat”" in w.text("quiz-question")
        assert_withheld(w, "quiz")
    phone_a.page.get_by_test_id("quiz-option-3").click()  # "more than three quarters": right (0.895)
    phone_b.page.get_by_test_id("quiz-option-0").click()  # "less than a quarter": wrong
    phone_b.page.wait_for_selector('[data-testid="quiz-result"][data-verdict="counted"]')
    assert phone_b.page.get_by_test_id("quiz-option-3").is_disabled()  # once only
    # the projector says how many answered, never which answers they chose, before the reveal
    teacher.page.wait_for_selector('[data-testid="quiz-result"][data-answered="2"]')
    assert teacher.text("quiz-result") == "2 of 3 answered."
    laptop.page.get_by_test_id("quiz-option-3").click()
    teacher.page.wait_for_selector('[data-testid="quiz-result"][data-answered="3"]')
    assert teacher.page.locator('[data-testid^="quiz-count-"]').count() == 0
    assert_withheld(teacher, "quiz")  # still nothing, with every answer in
    # a projector reloaded mid-quiz takes its room and the question back, and can still reveal (the
    # server keeps the answer: no page ever had it)
    teacher.page.goto(f"{teacher.base}/?present=1")
    teacher.page.wait_for_selector('[data-testid="quiz-result"][data-answered="3"]')
    assert_withheld(teacher, "quiz")
    teacher.page.get_by_test_id("quiz-reveal").click()
    phone_a.page.wait_for_selector('[data-testid="quiz-result"][data-verdict="right"]')
    phone_b.page.wait_for_selector('[data-testid="quiz-result"][data-verdict="wrong"]')
    assert "“more than three quarters”" in phone_b.text("quiz-result")
    teacher.page.wait_for_selector('[data-testid="quiz-count-3"]:text-is("2")')
    assert teacher.text("quiz-count-0") == "1" and teacher.text("quiz-count-1") == "0"
    assert "0.895" in teacher.text("quiz-explain")  # the number behind the answer, the server's
    for w in (teacher, laptop):  # the weights come back everywhere
        w.page.wait_for_selector("body:not(.cr-withheld)")
        w.page.wait_for_selector('#scene[data-withheld="false"]')
        assert "0.895" in shown_text(w)
        widths = link_widths(w)
        assert max(widths) > 2 * sorted(widths)[-2]  # "cat" wins by far again
    # the class report, in the page and as CSV
    teacher.page.get_by_test_id("quiz-end").click()
    teacher.page.locator("[data-testid=room-menu] summary").click()
    teacher.page.wait_for_selector('[data-testid="class-report-row-1"]')
    row = teacher.page.get_by_test_id("class-report-row-1").inner_text()
    assert "The five steps of attention · softmax" in row and "67%" in row and "less than a quarter (1)" in row
    with teacher.page.expect_download() as download:
        teacher.page.get_by_test_id("quiz-csv").click()
    lines = Path(download.value.path()).read_text(encoding="utf-8-sig").splitlines()
    assert lines[0].startswith("number,chapter,step,question,kind,in_room,answered,right,percent_right,answer")
    assert lines[1].startswith(
        "1,steps,softmax,steps.share,range,3,3,2,66.7,more than three quarters,less than a quarter,1,"
    )


def test_h_and_b_reach_every_follower(class_of_four: tuple[Watched, Watched, Watched, Watched]) -> None:
    teacher, phone, _, laptop = class_of_four
    code = presenter(teacher, query="example=the-cat-ate-its-fish&step=softmax&mask=full&focus=3")
    follower(phone, code)
    phone.wait_ready(step="softmax")
    teacher.page.keyboard.press("h")
    assert_withheld(teacher, "numbers")
    assert_withheld(phone, "teacher")
    assert phone.page.get_by_test_id("numbers-hidden-note").is_visible()
    follower(laptop, code)  # a late joiner is held back too
    assert_withheld(laptop, "teacher")
    teacher.page.keyboard.press("b")
    for w in (phone, laptop):
        w.page.wait_for_selector('[data-testid="follower-blank"]:visible')
        assert "teacher" in w.text("follower-blank")
    teacher.page.keyboard.press("b")
    teacher.page.keyboard.press("h")
    for w in (phone, laptop):
        w.page.wait_for_selector('[data-testid="follower-blank"]', state="hidden")
        w.page.wait_for_selector("body:not(.cr-withheld)")
        assert not w.page.get_by_test_id("numbers-hidden-note").is_visible()
        w.page.wait_for_selector('#scene[data-withheld="false"]')
        assert "0.895" in shown_text(w)


def room_state(w: Watched, code: str) -> dict[str, str]:
    with urllib.request.urlopen(f"{w.base}/api/rooms/{code}") as r:
        state: dict[str, str] = json.loads(r.read())["state"]
    return state


def present_at(w: Watched, query: str) -> None:
    """The presenter goes to a view (a reload keeps its room; the page sends the view at once)."""
    w.page.goto(f"{w.base}/?{query}&present=1")
    w.wait_ready()
    w.page.wait_for_selector('[data-testid="join-code"]')


def test_late_joiners_equal_the_room_for_every_kind_of_state(
    class_of_four: tuple[Watched, Watched, Watched, Watched],
) -> None:
    teacher, phone, _, laptop = class_of_four
    code = presenter(teacher, query="example=the-cat-ate-its-fish&step=score&focus=3")
    sentence = urllib.parse.quote("the dog chased its ball")
    views = [
        "example=the-cat-ate-its-fish&step=softmax&focus=2",  # "ate": a late joiner saw "its"
        "example=the-cat-ate-its-fish&step=mix&mask=causal&focus=1",
        "example=the-cat-ate-its-fish&step=score&focus=0&tokens=%5B%22a%22%2C%22b%22%5D&q=1%2C0%3B0%2C1&k=1%2C1%3B0%2C1&v=2%2C0%3B0%2C2",
        f"sentence={sentence}&step=softmax&layer=2&head=5&focus=3",
        "chapter=masks&step=difference&focus=2",
        "chapter=scaling&dk=16",
        "chapter=mistakes&step=no-scale",
    ]
    for i, query in enumerate(views):
        present_at(teacher, query)
        expected = dict(urllib.parse.parse_qsl(query))
        deadline = time.monotonic() + 10
        while not all(room_state(teacher, code).get(k) == v for k, v in expected.items() if k != "tokens"):
            assert time.monotonic() < deadline, (query, room_state(teacher, code))
            time.sleep(0.1)
        state = room_state(teacher, code)
        joiner = (phone, laptop)[i % 2]  # joins (or re-joins) after the change
        follower(joiner, code)
        # the address bar leaves out the default chapter and a chapter's empty parameters
        shown = {k: v for k, v in state.items() if k != "screen" and v != "" and (k, v) != ("chapter", "steps")}
        wait_params(joiner, seconds=30, **shown)  # a sentence runs the real model: slow on a loaded machine
        joiner.wait_ready(chapter=state.get("chapter", "steps"))
        if "focus" in state and state.get("chapter", "steps") in ("steps", "masks"):
            assert joiner.page.get_attribute("#app", "data-focus") == state["focus"]
            time.sleep(0.5)  # nothing moves it afterwards (the example's opening word did)
            assert joiner.page.get_attribute("#app", "data-focus") == state["focus"]
        assert joiner.text("step-title" if state.get("chapter", "steps") in ("steps", "masks") else "chapter-title")


def test_a_follower_has_no_teacher_controls_and_explores_then_follows(
    class_of_four: tuple[Watched, Watched, Watched, Watched],
) -> None:
    teacher, phone, _, _ = class_of_four
    code = presenter(teacher, query="example=the-cat-ate-its-fish&step=scale&focus=3")
    follower(phone, code)
    phone.wait_ready(step="scale")
    for testid in ("present", "quiz-ask", "room-menu", "lessons", "join-panel"):
        assert phone.page.get_by_test_id(testid).count() == 0, testid
    assert "live" in phone.text("follow-status")
    phone.page.get_by_test_id("step-mask").click()  # the student taps a control of the page
    phone.page.wait_for_selector('[data-testid="follow-bar"][data-following="false"]')
    assert "exploring" in phone.text("follow-status") and "live" not in phone.text("follow-status")
    assert phone.text("follow-toggle") == "Back to the teacher"
    wait_params(phone, step="mask")
    teacher.page.keyboard.press("ArrowRight")  # the teacher moves on: the explorer stays where it is
    wait_params(teacher, step="mask")
    time.sleep(0.3)
    teacher.page.keyboard.press("ArrowRight")
    wait_params(teacher, step="softmax")
    time.sleep(0.5)
    assert params(phone)["step"] == "mask"
    phone.page.get_by_test_id("follow-toggle").click()  # one tap back
    wait_params(phone, step="softmax")
    phone.page.wait_for_selector('[data-testid="follow-bar"][data-following="true"]')
    assert "live" in phone.text("follow-status")


def test_token_rules(three: tuple[Watched, Watched, Watched]) -> None:
    teacher, a, stranger = three
    code = presenter(teacher)
    assert "token" not in teacher.page.url  # gone from the address bar at once
    assert teacher.page.evaluate("sessionStorage.getItem('a3d.teacher')") == TOKEN
    follower(a, code)
    assert a.page.evaluate("JSON.stringify(sessionStorage)").find(TOKEN) == -1
    assert TOKEN not in a.page.content()
    assert a.page.get_by_test_id("present").count() == 0  # a follower gets no presenter controls
    # a short number is a chapter's token index, never taken for a teacher token
    teacher.page.goto(f"{teacher.base}/?chapter=projections&token=3")
    teacher.wait_ready()
    assert teacher.page.evaluate("sessionStorage.getItem('a3d.teacher')") == TOKEN
    # a wrong token opens no room, and says why
    stranger.expect_console_error("403")
    stranger.page.goto(f"{stranger.base}/?token=not-the-token-0123456789")
    stranger.wait_ready()
    stranger.page.get_by_test_id("present").click()
    stranger.page.wait_for_selector('[data-testid="join-panel"]:has-text("not this server")')
    assert stranger.page.get_by_test_id("join-address").count() == 0


def test_the_join_panel_folds_once_students_joined(three: tuple[Watched, Watched, Watched]) -> None:
    teacher, phone, _ = three
    teacher.page.set_viewport_size({"width": 1280, "height": 720})
    code = presenter(teacher, query="example=the-cat-ate-its-fish&step=softmax&focus=3")
    assert not teacher.page.get_by_test_id("join-fold").is_visible()  # nobody joined yet
    follower(phone, code)
    count(teacher, 1)
    scene_before = teacher.page.locator("#scene").bounding_box()
    teacher.page.get_by_test_id("join-fold").click()
    assert not teacher.page.get_by_test_id("join-qr").is_visible()
    assert teacher.text("join-code") == code and teacher.page.get_by_test_id("follower-count").is_visible()
    teacher.page.wait_for_timeout(300)
    assert teacher.page.locator("#scene").bounding_box()["width"] > scene_before["width"]  # the room goes to the view
    teacher.page.get_by_test_id("join-fold").click()
    assert teacher.page.get_by_test_id("join-qr").is_visible()


def test_follower_phone_layout(three: tuple[Watched, Watched, Watched]) -> None:
    teacher, phone, _ = three
    code = presenter(teacher, query="example=the-cat-ate-its-fish&step=softmax&focus=3")
    phone.page.set_viewport_size({"width": 390, "height": 844})
    follower(phone, code)
    teacher.page.get_by_test_id("quiz-ask").click()
    phone.page.wait_for_selector('[data-testid="quiz-option-0"]')
    layout = phone.page.evaluate(
        """() => {
          const r = (s) => document.querySelector(s).getBoundingClientRect();
          const words = [...document.querySelectorAll('.cr-word')].map((b) => b.getBoundingClientRect());
          return { sw: document.documentElement.scrollWidth, toggle: r('[data-testid=follow-toggle]'), words };
        }"""
    )
    assert layout["sw"] <= 390, layout["sw"]
    assert layout["toggle"]["height"] >= 44 and layout["toggle"]["right"] <= 390
    for word in layout["words"]:
        assert word["height"] >= 44 and word["right"] <= 390 and word["bottom"] <= 844
    teacher.page.get_by_test_id("quiz-end").click()


def test_reset_and_close_a_room_from_the_page(three: tuple[Watched, Watched, Watched]) -> None:
    teacher, a, _ = three
    code = presenter(teacher, query="example=the-cat-ate-its-fish&step=softmax&focus=3")
    follower(a, code)
    teacher.page.on("dialog", lambda d: d.accept())  # "Reset the room?", "Close the room?"
    teacher.page.get_by_test_id("quiz-ask").click()
    a.page.wait_for_selector('[data-testid="quiz-option-1"]')
    a.page.get_by_test_id("quiz-option-1").click()
    a.page.wait_for_selector('[data-testid="quiz-result"][data-verdict="counted"]')
    teacher.page.get_by_test_id("quiz-reveal").click()
    teacher.page.locator("[data-testid=room-menu] summary").click()
    teacher.page.wait_for_selector('[data-testid="class-report-row-1"]')
    teacher.page.get_by_test_id("room-reset").click()  # the summary starts again; the quiz is gone everywhere
    teacher.page.wait_for_selector('[data-testid="quiz-summary-empty"]')
    a.page.wait_for_selector('[data-testid="quiz"]', state="hidden")
    assert a.page.get_by_test_id("follow-bar").get_attribute("data-status") == "live"
    teacher.page.get_by_test_id("room-close").click()
    a.page.wait_for_selector('[data-testid="room-closed"]:has-text("closed")')
    # why, in the phone's language: the page's catalog words for the server's kind of end ("why": "closed")
    assert "the teacher closed this room" in a.page.get_by_test_id("room-closed").inner_text()
    assert a.page.get_by_test_id("follow-bar").get_attribute("data-status") == "closed"
    teacher.page.wait_for_selector('[data-testid="classroom-message"]:has-text("is closed")')
    assert teacher.page.evaluate("sessionStorage.getItem('a3d.presenter')") is None
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(f"{teacher.base}/api/rooms/{code}")
    assert gone.value.code == 404


def test_reconnects_after_the_server_restarts(browser: Any, tmp_path: Path) -> None:
    port = free_port()
    with app_process(tmp_path, port=port) as (base, proc):
        teacher = {"authorization": f"Bearer {TOKEN}"}
        request = urllib.request.Request(base + "/api/rooms", method="POST", headers=teacher)
        with urllib.request.urlopen(request) as r:
            room = json.loads(r.read())
        put(base, room, {"example": "the-cat-ate-its-fish", "step": "scale", "focus": "3"})
        with watched_page(browser, base) as w:
            w.expect_console_error("WebSocket connection")  # Chromium logs each refused reconnection
            follower(w, room["code"])
            wait_params(w, step="scale")
            proc.terminate()  # the server goes away: the page notices and keeps retrying
            proc.wait(timeout=15)
            w.page.wait_for_selector('[data-testid="follow-bar"][data-status="retrying"]', timeout=15_000)
            with app_process(tmp_path, port=port) as (again, _):  # the same address, the rooms kept in SQLite
                put(again, room, {"example": "the-cat-ate-its-fish", "step": "mix", "focus": "1"})
                w.page.wait_for_selector('[data-testid="follow-bar"][data-status="live"]', timeout=20_000)
                wait_params(w, step="mix", focus="1")  # caught up with what changed while it was away


def put(base: str, room: dict[str, Any], state: dict[str, str]) -> None:
    request = urllib.request.Request(
        f"{base}/api/rooms/{room['code']}/state",
        data=json.dumps(state).encode(),
        method="PUT",
        headers={"authorization": f"Bearer {room['presenter_key']}", "content-type": "application/json"},
    )
    with urllib.request.urlopen(request) as r:
        assert r.status == 204


def test_record_save_replay_export_and_import_a_lesson(watched: Watched, classroom_server: str, tmp_path: Path) -> None:
    w = watched
    w.base = classroom_server
    w.page.goto(f"{classroom_server}/?token={TOKEN}&example=the-cat-ate-its-fish&step=score&mask=full&focus=3")
    w.wait_ready(step="score")
    w.page.locator("[data-testid=lessons] summary").click()
    w.page.wait_for_selector("[data-testid=lesson-select] option", state="attached")  # the ready-made lesson is listed
    assert "the cat ate its fish" in w.page.get_by_test_id("lesson-select").inner_text()
    w.page.get_by_test_id("lesson-note").fill("q·k for its")
    w.page.get_by_test_id("lesson-add").click()
    w.page.get_by_test_id("next-step").click()
    w.wait_ready(step="scale")
    w.page.get_by_test_id("lesson-note").fill("divide by root 2")
    w.page.get_by_test_id("lesson-add").click()
    w.page.get_by_test_id("lesson-title").fill("Two steps")
    w.page.get_by_test_id("lesson-save").click()
    w.page.wait_for_selector("[data-testid=lesson-status]:has-text('Saved as lesson')")
    # export it as a file, import it back
    with w.page.expect_download() as download:
        w.page.get_by_test_id("lesson-export").click()
    exported = json.loads(Path(download.value.path()).read_text())
    assert exported["title"] == "Two steps"
    assert [v["note"] for v in exported["views"]] == ["q·k for its", "divide by root 2"]
    assert [v["state"]["step"] for v in exported["views"]] == ["score", "scale"]
    file = tmp_path / "lesson.json"
    file.write_text(json.dumps({**exported, "title": "Two steps, imported"}))
    w.page.get_by_test_id("lesson-import").set_input_files(str(file))
    w.page.wait_for_selector("[data-testid=lesson-status]:has-text('Imported as lesson')")
    teacher = {"authorization": f"Bearer {TOKEN}"}  # reading lessons needs the teacher token
    with urllib.request.urlopen(urllib.request.Request(classroom_server + "/api/lessons", headers=teacher)) as r:
        titles = [lesson["title"] for lesson in json.loads(r.read())]
    assert "Two steps" in titles and "Two steps, imported" in titles
    # replay with the clicker
    w.page.goto(f"{classroom_server}/?example=the-cat-ate-its-fish&step=mix&focus=0")  # the token stays in the tab
    w.wait_ready(step="mix")
    w.page.locator("[data-testid=lessons] summary").click()
    w.page.wait_for_selector("[data-testid=lesson-select] option", state="attached")
    w.page.get_by_test_id("lesson-select").select_option(label="Two steps (2 views)")
    w.page.get_by_test_id("lesson-play").click()
    w.wait_ready(step="score")
    wait_params(w, step="score", focus="3")
    assert w.text("lesson-view-note") == "q·k for its"
    w.page.keyboard.press("PageDown")
    wait_params(w, step="scale")
    assert w.text("lesson-view-note") == "divide by root 2"
    w.page.keyboard.press("PageUp")
    wait_params(w, step="score")


def test_the_websocket_connects_under_the_strict_csp(watched: Watched, classroom_server: str) -> None:
    w = watched
    w.base = classroom_server
    request = urllib.request.Request(
        classroom_server + "/api/rooms", method="POST", headers={"authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request) as r:
        room = json.loads(r.read())
    response = w.page.goto(f"{classroom_server}/?room={room['code']}")
    csp = response.headers["content-security-policy"]
    assert "connect-src 'self'" in csp and "ws:" not in csp and "*" not in csp
    w.wait_ready()
    w.page.wait_for_selector('[data-testid="follow-bar"][data-status="live"]')  # no CSP violation (console)


AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"


def _axe(page: Any) -> list[str]:
    page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = page.evaluate(
        "() => axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })"
    )
    return [f"{v['id']}: {v['help']} — {v['nodes'][0]['target'][0]}" for v in result["violations"]]


def test_classroom_controls_have_no_axe_violations(browser: Any, classroom_server: str) -> None:
    if not AXE.exists():
        pytest.skip("axe-core is not installed (npm ci)")
    with ExitStack() as stack:
        contexts = [browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True) for _ in range(2)]
        for c in contexts:
            stack.callback(c.close)
        teacher, student = (c.new_page() for c in contexts)
        teacher.goto(f"{classroom_server}/?token={TOKEN}&example=the-cat-ate-its-fish&step=softmax&focus=3")
        teacher.wait_for_selector('#app[data-ready="true"]')
        teacher.locator("[data-testid=lessons] summary").click()
        with contexts[0].expect_page() as teachers_window:
            teacher.get_by_test_id("present").click()
        window = teachers_window.value
        teacher.wait_for_selector("[data-testid=join-qr]")
        code = teacher.get_by_test_id("join-code").inner_text()
        student.set_viewport_size({"width": 390, "height": 844})
        student.goto(f"{classroom_server}/?room={code}")
        student.wait_for_selector('[data-testid=follow-bar][data-status="live"]')
        teacher.get_by_test_id("quiz-ask").click()
        student.wait_for_selector("[data-testid=quiz-option-1]")
        teacher.wait_for_selector("[data-testid=quiz-result]:has-text('answered')")
        teacher.locator("[data-testid=room-menu] summary").click()
        teacher.wait_for_selector("[data-testid=quiz-summary] p")
        window.wait_for_selector("[data-testid=teacher-status]:has-text('Room')")
        window.wait_for_selector("[data-testid=quiz-result]:has-text('answered')")
        assert _axe(teacher) == []
        assert _axe(student) == []
        assert _axe(window) == []
        teacher.locator("[data-testid=room-menu] summary").click()  # closed again (it closed Lessons as it opened)
        teacher.get_by_test_id("quiz-end").click()


def present_the_ready_made_lesson(w: Watched, classroom_server: str) -> tuple[list[dict[str, Any]], Any]:
    """At 1280×720, the teacher's page plays the ready-made lesson and presses Present: its views (read with
    the teacher token) and the teacher's window that Present opened."""
    w.base = classroom_server
    teacher = {"authorization": f"Bearer {TOKEN}"}  # reading lessons needs the teacher token
    with urllib.request.urlopen(urllib.request.Request(classroom_server + "/api/lessons", headers=teacher)) as r:
        ready_made = json.loads(r.read())[0]
    with urllib.request.urlopen(
        urllib.request.Request(f"{classroom_server}/api/lessons/{ready_made['id']}", headers=teacher)
    ) as r:
        views: list[dict[str, Any]] = json.loads(r.read())["views"]
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(f"{classroom_server}/?token={TOKEN}")
    w.wait_ready()
    w.page.locator("[data-testid=lessons] summary").click()
    w.page.wait_for_selector("[data-testid=lesson-select] option", state="attached")
    w.page.get_by_test_id("lesson-select").select_option(str(ready_made["id"]))
    w.page.get_by_test_id("lesson-play").click()
    with w.page.context.expect_page() as opened:
        w.page.get_by_test_id("present").click()
    w.page.wait_for_selector("[data-testid=join-qr]")
    return views, opened.value


def test_the_ready_made_lesson_plays_through_in_the_projector_view(watched: Watched, classroom_server: str) -> None:
    w = watched
    views, window = present_the_ready_made_lesson(w, classroom_server)
    window.close()
    for i, view in enumerate(views):
        if i:
            w.page.keyboard.press("PageDown")
        w.page.wait_for_selector(f'[data-testid=lesson-playing][data-index="{i}"]')
        # the address bar names every chapter but the default one ("steps")
        wait_params(w, **{k: v for k, v in view["state"].items() if (k, v) != ("chapter", "steps")})
        # the projector never shows a note (it may hold the answer): the teacher's window does
        assert w.page.get_by_test_id("lesson-view-note").count() == 0
        assert view["note"][:40] not in shown_text(w)
        assert w.page.evaluate("document.documentElement.scrollHeight") <= 720
    w.page.keyboard.press("PageDown")  # past the last view: it stays there
    assert w.page.get_by_test_id("lesson-playing").get_attribute("data-index") == str(len(views) - 1)


# the canvas's drawing buffer and its label layer at the size of the box they are shown in
FITTED = """(testid) => {
  const c = document.querySelector(`[data-testid=${testid}]`);
  const box = c?.parentElement, labels = box?.querySelector(".label-layer");
  if (!c || !labels || !box.clientWidth) return null;
  const [w, h, dpr] = [box.clientWidth, box.clientHeight, window.devicePixelRatio];
  const drawn = [c.width, c.height, labels.style.width, labels.style.height];
  return drawn.join() === [Math.round(w * dpr), Math.round(h * dpr), `${w}px`, `${h}px`].join();
}"""


@pytest.mark.parametrize(("query", "canvas"), [("", "scene-canvas"), ("&chapter=heads", "stage-canvas")])
def test_present_fits_the_3d_view_to_the_projector_while_the_teachers_window_is_open(
    watched: Watched, classroom_server: str, query: str, canvas: str
) -> None:
    """Present turns the page into the projector view (another shape for the 3D view) and opens the
    teacher's window, which takes the focus: Chromium then calls no ResizeObserver in the projector's
    page, and the canvas stayed stretched at its old shape, its labels placed for the new one."""
    w = watched
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(f"{classroom_server}/?token={TOKEN}{query}")
    w.wait_ready()
    before = w.page.evaluate(f"() => document.querySelector('[data-testid={canvas}]').width")
    with w.page.context.expect_page() as teachers_window:
        w.page.get_by_test_id("present").click()
    window = teachers_window.value
    w.page.wait_for_selector("[data-testid=join-qr]")
    w.page.wait_for_function(FITTED, arg=canvas, timeout=5000)
    after = w.page.evaluate(f"() => document.querySelector('[data-testid={canvas}]').width")
    assert after < before  # the projector view's 3D view is narrower (the panels and the join panel beside it)
    window.close()


def test_the_clicker_running_ahead_of_the_room_keeps_the_lesson_where_it_is(
    watched: Watched, classroom_server: str
) -> None:
    """The teacher presses PageDown three times while the room is slow to take the first view's deck: the
    projector stays on the last view (the echo of an earlier deck took it back there, the play bar said
    view 10 of 12 on view 12) and the teacher's window ends on the last view's note (decks sent together
    reached the room in any order)."""
    w = watched
    views, window = present_the_ready_made_lesson(w, classroom_server)
    last = len(views) - 1
    for i in range(1, last - 2):
        w.page.keyboard.press("PageDown")
        w.page.wait_for_selector(f'[data-testid=lesson-playing][data-index="{i}"]')
    window.wait_for_selector(f'[data-testid=lesson-playing][data-index="{last - 3}"]', state="attached")
    held: list[Any] = []  # the next deck the projector sends waits here: a slow room
    w.page.route("**/api/rooms/*/deck", lambda route: held.append(route) if not held else route.continue_())
    for i in range(last - 2, last + 1):
        w.page.keyboard.press("PageDown")
        w.page.wait_for_selector(f'[data-testid=lesson-playing][data-index="{i}"]')
    wait_params(w, chapter=views[last]["state"]["chapter"])
    assert len(held) == 1
    with w.page.expect_response(lambda r: r.url.endswith("/deck") and r.request.method == "PUT"):
        held[0].continue_()  # the room takes the first deck at last
    w.page.wait_for_timeout(700)  # its echo, and any deck sent after it, reach both windows
    window.wait_for_selector(f'[data-testid=lesson-playing][data-index="{last}"]', state="attached", timeout=5000)
    assert window.get_by_test_id("teacher-note").inner_text() == views[last]["note"]
    assert w.page.get_by_test_id("lesson-playing").get_attribute("data-index") == str(last)
    assert window.get_by_test_id("lesson-playing").get_attribute("data-index") == str(last)
    w.page.unroute_all()
    window.close()
