"""The classroom in Chromium: a presenter page and two follower pages on a server of our own
(known teacher token, its own data directory): following, the quiz, the token rules, the
projector view, reconnection after a restart, and a follower's phone."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Watched, watched_page
from tests.classroom.conftest import TOKEN, app_process, free_port

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def classroom_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with app_process(tmp_path_factory.mktemp("classroom")) as (base, _):
        yield base


def presenter(w: Watched, token: str = TOKEN) -> str:
    """Open the teacher link, press Present; the room's code."""
    w.page.goto(f"{w.base}/?token={token}")
    w.wait_ready()
    w.page.get_by_test_id("present").click()
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


def wait_params(w: Watched, **expected: str) -> None:
    deadline = time.monotonic() + 10
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


def test_quiz_counts_and_reveals(three: tuple[Watched, Watched, Watched]) -> None:
    teacher, a, b = three
    teacher.page.goto(f"{teacher.base}/?example=the-cat-ate-its-fish&step=softmax&mask=full&focus=3")
    code = presenter(teacher)
    follower(a, code)
    follower(b, code)
    count(teacher, 2)
    teacher.page.get_by_test_id("quiz-ask").click()
    for w in (a, b):
        w.page.wait_for_selector('[data-testid="quiz-word-1"]')
        assert "“its”" in w.text("quiz-question")
    hidden = "getComputedStyle(document.querySelector('#matrix tbody td')).color === 'rgba(0, 0, 0, 0)'"
    assert a.page.evaluate(hidden) and teacher.page.evaluate(hidden)  # no peeking at the weights meanwhile
    a.page.get_by_test_id("quiz-word-1").click()  # "cat": right
    b.page.get_by_test_id("quiz-word-4").click()  # "fish": wrong
    assert b.page.get_by_test_id("quiz-word-1").is_disabled()  # once only
    # the projector says how many answered, never which word they chose, before the reveal
    teacher.page.wait_for_selector('[data-testid="quiz-result"][data-answered="2"]')
    assert teacher.text("quiz-result") == "2 of 2 answered."
    assert teacher.page.locator('[data-testid^="quiz-count-"]').count() == 0
    teacher.page.get_by_test_id("quiz-reveal").click()
    teacher.page.wait_for_selector('[data-testid="quiz-count-1"]:text-is("1")')
    assert teacher.text("quiz-count-4") == "1" and teacher.text("quiz-count-0") == "0"
    a.page.wait_for_selector('[data-testid="quiz-result"][data-verdict="right"]')
    b.page.wait_for_selector('[data-testid="quiz-result"][data-verdict="wrong"]')
    assert "“cat”" in b.text("quiz-result")
    assert not a.page.evaluate(hidden) and not teacher.page.evaluate(hidden)
    # the answer is the argmax of the weights the server computed for "its"
    weights = [float(teacher.text(f"cell-3-{j}")) for j in range(5)]
    assert max(range(5), key=lambda j: weights[j]) == 1


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


def test_projector_view_fills_the_screen(watched: Watched, classroom_server: str) -> None:
    w = watched
    w.base = classroom_server
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(f"{classroom_server}/?token={TOKEN}&present=1&example=the-cat-ate-its-fish&step=softmax&focus=3")
    w.wait_ready()
    w.page.wait_for_selector('[data-testid="join-qr"]')
    for size in ({"width": 1280, "height": 720}, {"width": 1920, "height": 1080}):
        w.page.set_viewport_size(size)
        time.sleep(0.3)
        box = w.page.evaluate(
            """() => {
              const r = (s) => document.querySelector(s).getBoundingClientRect();
              const px = (s) => parseFloat(getComputedStyle(document.querySelector(s)).fontSize);
              return { sw: document.documentElement.scrollWidth, sh: document.documentElement.scrollHeight,
                       scene: r('#scene'), table: r('#matrix'), text: r('#step-text'), qr: r('[data-testid=join-qr]'),
                       cell: px('#matrix tbody td'), line: px('#step-text'),
                       address: px('[data-testid=join-address]') };
            }"""
        )
        assert box["sw"] <= size["width"] and box["sh"] <= size["height"], box
        for part in ("scene", "table", "text", "qr"):
            r = box[part]
            assert r["width"] > 0 and r["bottom"] <= size["height"] and r["right"] <= size["width"], (part, r)
        assert box["scene"]["height"] > size["height"] * 0.6
        assert min(box["cell"], box["line"], box["address"]) >= 24
    # the clicker keys keep walking the lesson; B blanks, H hides the numbers
    w.page.keyboard.press("PageDown")
    w.wait_ready(step="mix")
    w.page.keyboard.press("b")
    assert w.page.get_by_test_id("blank").is_visible()
    w.page.keyboard.press("b")
    assert not w.page.get_by_test_id("blank").is_visible()
    w.page.keyboard.press("h")
    assert w.page.evaluate("getComputedStyle(document.querySelector('#matrix tbody td')).color") == "rgba(0, 0, 0, 0)"
    w.page.keyboard.press("h")
    assert w.page.evaluate("getComputedStyle(document.querySelector('#matrix tbody td')).color") != "rgba(0, 0, 0, 0)"
    # a chapter that draws itself fills the screen the same way
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(f"{classroom_server}/?present=1&chapter=scaling")
    w.wait_ready()
    w.page.wait_for_selector("#chapter-stage canvas")
    box = w.page.evaluate(
        """() => ({ sh: document.documentElement.scrollHeight, sw: document.documentElement.scrollWidth,
                    stage: document.querySelector('#chapter-stage').getBoundingClientRect(),
                    title: parseFloat(getComputedStyle(document.querySelector('#chapter-text')).fontSize) })"""
    )
    assert box["sh"] <= 720 and box["sw"] <= 1280
    assert box["stage"]["height"] > 720 * 0.6 and box["stage"]["bottom"] <= 720
    assert box["title"] >= 24


def test_follower_phone_layout(three: tuple[Watched, Watched, Watched]) -> None:
    teacher, phone, _ = three
    teacher.page.goto(f"{teacher.base}/?example=the-cat-ate-its-fish&step=softmax&focus=3")
    code = presenter(teacher)
    phone.page.set_viewport_size({"width": 390, "height": 844})
    follower(phone, code)
    teacher.page.get_by_test_id("quiz-ask").click()
    phone.page.wait_for_selector('[data-testid="quiz-word-0"]')
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


def test_closed_room_says_so(three: tuple[Watched, Watched, Watched]) -> None:
    teacher, a, _ = three
    code = presenter(teacher)
    follower(a, code)
    room = json.loads(teacher.page.evaluate("sessionStorage.getItem('a3d.presenter')"))
    request = urllib.request.Request(
        f"{teacher.base}/api/rooms/{code}", method="DELETE", headers={"authorization": f"Bearer {room['key']}"}
    )
    with urllib.request.urlopen(request) as r:
        assert r.status == 204
    a.page.wait_for_selector('[data-testid="room-closed"]:has-text("closed")')
    assert a.page.get_by_test_id("follow-bar").get_attribute("data-status") == "closed"


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
        teacher.get_by_test_id("present").click()
        teacher.wait_for_selector("[data-testid=join-qr]")
        code = teacher.get_by_test_id("join-code").inner_text()
        student.set_viewport_size({"width": 390, "height": 844})
        student.goto(f"{classroom_server}/?room={code}")
        student.wait_for_selector('[data-testid=follow-bar][data-status="live"]')
        teacher.get_by_test_id("quiz-ask").click()
        student.wait_for_selector("[data-testid=quiz-word-1]")
        teacher.wait_for_selector("[data-testid=quiz-count-1]")
        assert _axe(teacher) == []
        assert _axe(student) == []
        teacher.get_by_test_id("quiz-end").click()


def test_the_ready_made_lesson_plays_through_in_the_projector_view(watched: Watched, classroom_server: str) -> None:
    w = watched
    w.base = classroom_server
    teacher = {"authorization": f"Bearer {TOKEN}"}  # reading lessons needs the teacher token
    with urllib.request.urlopen(urllib.request.Request(classroom_server + "/api/lessons", headers=teacher)) as r:
        ready_made = json.loads(r.read())[0]
    with urllib.request.urlopen(
        urllib.request.Request(f"{classroom_server}/api/lessons/{ready_made['id']}", headers=teacher)
    ) as r:
        views = json.loads(r.read())["views"]
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(f"{classroom_server}/?token={TOKEN}")
    w.wait_ready()
    w.page.locator("[data-testid=lessons] summary").click()
    w.page.wait_for_selector("[data-testid=lesson-select] option", state="attached")
    w.page.get_by_test_id("lesson-select").select_option(str(ready_made["id"]))
    w.page.get_by_test_id("lesson-play").click()
    w.page.get_by_test_id("present").click()
    w.page.wait_for_selector("[data-testid=join-qr]")
    for i, view in enumerate(views):
        if i:
            w.page.keyboard.press("PageDown")
        w.page.wait_for_selector(f'[data-testid=lesson-playing][data-index="{i}"]')
        # the address bar names every chapter but the default one ("steps")
        wait_params(w, **{k: v for k, v in view["state"].items() if (k, v) != ("chapter", "steps")})
        assert w.text("lesson-view-note") == view["note"]
        assert w.page.evaluate("document.documentElement.scrollHeight") <= 720
    w.page.keyboard.press("PageDown")  # past the last view: it stays there
    assert w.page.get_by_test_id("lesson-playing").get_attribute("data-index") == str(len(views) - 1)
