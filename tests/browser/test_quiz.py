"""The class quiz in Chromium, as a class runs it: a projector window and the teacher's window (opened by
Present, on one computer), a saved lesson played through every chapter with a question in each, and seven
phones: three behind one address (a school's NAT: two real browser pages and a WebSocket phone from
127.0.0.1) and four from addresses of their own (a real browser page through a small TCP relay that connects
from 127.0.0.2: Chromium cannot pick its source address; WebSocket phones from 127.0.0.3, .4 and .5).

For the question of each chapter (all 12): before the reveal no projector or phone shows the answer (its
number, the phrase that gives it away, the sentence the reveal shows, the lesson's note, which the teacher's
window does show); all seven votes are counted; after the reveal the projector's counts are the votes sent and
every phone's verdict agrees with them; a vote sent after the reveal is refused and the phone says why. The
class report's CSV equals the votes sent, and is kept for the lesson."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Origin, Subprotocol

from app.classroom import questions
from app.classroom.questions import Asked, f3
from tests.browser.conftest import Watched, watched_page
from tests.classroom.conftest import TOKEN, app_process

pytestmark = pytest.mark.browser

CAT = "the-cat-ate-its-fish"
# one view per chapter, at the step its question is asked; the note holds the answer (the teacher's only)
CHAPTERS: list[tuple[str, dict[str, str]]] = [
    ("rnn.fade", {"chapter": "rnn", "step": "chain"}),
    ("projections.learned", {"chapter": "projections", "step": "x"}),
    ("steps.share", {"chapter": "steps", "example": CAT, "step": "softmax", "mask": "full", "focus": "3"}),
    ("scaling.unscaled", {"chapter": "scaling", "step": "spread"}),
    ("masks.zero", {"chapter": "masks", "example": CAT, "step": "full", "mask": "full", "focus": "1"}),
    ("heads.concat", {"chapter": "heads", "step": "heads"}),
    ("positions.moved", {"chapter": "positions", "step": "plain"}),
    ("block.residual", {"chapter": "block", "step": "attention"}),
    ("mistakes.late", {"chapter": "mistakes", "step": "no-scale"}),
    ("writing.next", {"chapter": "writing", "step": "write"}),
    ("today.sink", {"chapter": "today", "step": "sink"}),
    ("tiles.rescale", {"chapter": "tiles", "step": "rescale"}),
]  # fmt: skip
LATE = "steps.share"  # the question at which one phone's answer comes after the reveal
# GUARDED: every request of the test's pages passes a route (tests/browser/conftest.py watched_page's guard),
# which Playwright's sync API answers only while the test is inside one of its calls. A test blocked on a
# socket phone's recv() holds back the pages' requests meanwhile: the teacher's Ask went out only when that
# wait ended (twice in whole-suite runs on 6 Dec, 30 s and 120 s after the click: whether the POST left
# before click() returned was a race). So the test waits on a browser page before it reads the sockets, and
# its waits allow SLOW seconds for a machine busy with the whole suite; a failure lists what the teacher's
# windows asked the server, and when.
SLOW = 60


def note_of(asked: Asked) -> str:
    return f"Teacher's eyes only: {asked.explain}"


def api(base: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(base + path, data=data, method=method, headers=headers)) as r:
        raw = r.read()
        return json.loads(raw) if raw else None


@contextmanager
def relay(target_port: int, source: str) -> Iterator[int]:
    """A TCP relay on 127.0.0.1 whose connections reach the server from `source` (another phone's address)."""
    loop = asyncio.new_event_loop()
    ready: list[int] = []
    stop = asyncio.Event()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port, local_addr=(source, 0))
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        ready.append(server.sockets[0].getsockname()[1])
        await stop.wait()
        server.close()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    thread = threading.Thread(target=lambda: loop.run_until_complete(main()), daemon=True)
    thread.start()
    while not ready:
        time.sleep(0.01)
    try:
        yield ready[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(5)
        loop.close()


class WsPhone:
    """A phone that speaks the room's WebSocket itself, from an address of its own."""

    def __init__(self, stack: ExitStack, base: str, code: str, source: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        sock = socket.create_connection((host, int(port)), source_address=(source, 0))
        url = base.replace("http", "ws") + f"/api/rooms/{code}/ws"
        # max_queue=None: a phone's page reads every message as it comes; this one reads them when the test
        # asks, so its client keeps them all meanwhile (with websockets' 16-frame flow control the server
        # would find it too slow while the teacher walks a chapter, and leave it out of the next question)
        protocol = [Subprotocol("attention3d.follower")]
        opened: Any = connect(url, sock=sock, origin=Origin(base), subprotocols=protocol, max_queue=None)
        self.ws: ClientConnection = stack.enter_context(opened)
        self.hello = self.next("seq")
        self.seen: list[dict[str, Any]] = []

    def question(self, timeout: float = SLOW) -> dict[str, Any]:
        """The next question asked (a quiz with no answer yet)."""
        while True:
            quiz: dict[str, Any] | None = self.next("quiz", timeout)["quiz"]
            if quiz is not None and "answer" not in quiz:
                return quiz

    def next(self, field: str, timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            message: dict[str, Any] = json.loads(self.ws.recv(timeout=max(0.05, deadline - time.monotonic())))
            if field in message:
                return message

    def vote(self, quiz: str, choice: int) -> dict[str, Any]:
        self.ws.send(json.dumps({"vote": {"quiz": quiz, "choice": choice}}))
        while True:
            message: dict[str, Any] = json.loads(self.ws.recv(timeout=20))
            if "voted" in message or "error" in message:
                return message


class HeldReveal:
    """A phone's socket whose reveal is held back (a slow link): its student taps after the answer is out."""

    def __init__(self) -> None:
        self.holding = False
        self.held: list[str] = []
        self.route: Any = None

    def __call__(self, ws: Any) -> None:
        server = ws.connect_to_server()
        ws.on_message(lambda m: server.send(m))
        server.on_message(self.from_server)
        self.route = ws

    def from_server(self, message: str) -> None:
        if self.holding and '"answer"' in message:
            self.held.append(message)
        else:
            self.route.send(message)

    def release(self) -> None:
        self.holding = False
        for message in self.held:
            self.route.send(message)
        self.held.clear()


@pytest.fixture(scope="module")
def models() -> Any:
    from app.web.quiz import ServerModels

    return ServerModels(SimpleNamespace(state=SimpleNamespace(model_dir=None, backend="numpy")))


def text(w: Any) -> str:
    page = w.page if isinstance(w, Watched) else w
    shown: str = page.evaluate("document.body.innerText")
    return shown


def give_aways(asked: Asked) -> list[str]:
    """What no screen may show before the reveal: the question's own list, its reveal sentence, and for a range
    its number as pages write it."""
    out = [*asked.hides, asked.explain]
    if asked.kind == "range":
        out += [f3(asked.value), f"{asked.value:.4f}".replace("-", "\u2212")]
    return [s for s in out if s]


def wait_at(page: Any, state: dict[str, str]) -> None:
    page.wait_for_selector(
        f'#app[data-ready="true"][data-chapter="{state["chapter"]}"][data-step="{state["step"]}"]', timeout=SLOW * 1000
    )


def requests_of(context: Any) -> list[str]:
    """What the pages of `context` ask the server (not its files), each with the seconds since now."""
    start = time.monotonic()
    seen: list[str] = []

    def note(kind: str, r: Any) -> None:
        if "/static/" not in r.url:
            seen.append(f"{time.monotonic() - start:7.2f} s {kind} {r.method} {r.url.split('/', 3)[-1][:80]}")

    context.on("request", lambda r: note("asked", r))
    context.on("requestfinished", lambda r: note("answered", r))
    context.on("requestfailed", lambda r: note("failed", r))
    return seen


def test_a_question_in_every_chapter_with_a_projector_a_teachers_window_and_seven_phones(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, models: Any
) -> None:
    asked = {qid: questions.QUESTIONS[qid].ask(state, models) for qid, state in CHAPTERS}
    with ExitStack() as stack:
        base, _ = stack.enter_context(app_process(tmp_path_factory.mktemp("quiz")))
        port = int(base.rsplit(":", 1)[1])
        lesson = api(
            base,
            "POST",
            "/api/lessons",
            {
                "title": "Every chapter's question",
                "views": [{"state": s, "note": note_of(asked[q])} for q, s in CHAPTERS],
            },
        )
        projector = stack.enter_context(watched_page(browser, base))
        projector.page.set_viewport_size({"width": 1280, "height": 720})
        projector.page.goto(f"{base}/?token={TOKEN}")
        projector.wait_ready()
        with projector.page.context.expect_page() as opened:
            projector.page.get_by_test_id("present").click()
        teacher = opened.value
        teacher_errors: list[str] = []
        teacher.on("pageerror", lambda e: teacher_errors.append(str(e)))
        teacher.on("console", lambda m: teacher_errors.append(m.text) if m.type == "error" else None)
        asked_server = requests_of(teacher.context)  # the projector's and the teacher's window's
        for page in (projector.page, teacher):
            page.set_default_timeout(SLOW * 1000)
        projector.page.wait_for_selector('[data-testid="join-code"]')
        code = projector.text("join-code")
        teacher.wait_for_selector('[data-testid="teacher-status"]:has-text("● live")')

        # the phones: two browsers and a socket behind one address, a browser and three sockets from their own
        held = HeldReveal()
        phones: list[Watched] = []
        for i in range(3):
            origin = base if i < 2 else f"http://127.0.0.1:{stack.enter_context(relay(port, '127.0.0.2'))}"
            w = stack.enter_context(watched_page(browser, origin))
            w.page.set_viewport_size({"width": 390, "height": 844})
            w.page.set_default_timeout(SLOW * 1000)
            if i == 0:
                w.page.route_web_socket("**/api/rooms/*/ws", held)
            w.page.goto(f"{origin}/?room={code}")
            w.page.wait_for_selector('[data-testid="follow-bar"][data-status="live"]')
            phones.append(w)
        sockets = [WsPhone(stack, base, code, f"127.0.0.{i}") for i in (1, 3, 4, 5)]
        projector.page.wait_for_selector('[data-testid="follower-count"][data-count="7"]', timeout=20_000)

        # the teacher plays the lesson from their own window: the projector follows, the note stays here
        teacher.locator("[data-testid=lessons] summary").click()
        teacher.wait_for_selector(f"[data-testid=lesson-select] option[value='{lesson['id']}']", state="attached")
        teacher.get_by_test_id("lesson-select").select_option(str(lesson["id"]))
        teacher.get_by_test_id("lesson-play").click()
        sent: list[list[int]] = []
        for n, (qid, state) in enumerate(CHAPTERS):
            a = asked[qid]
            if n:
                teacher.keyboard.press("PageDown")
            for page in (teacher, projector.page, *(p.page for p in phones)):
                wait_at(page, state)
            teacher.wait_for_selector(f'[data-testid="teacher-note"]:has-text("{a.explain[:30]}")')
            ask = teacher.get_by_test_id("quiz-ask")
            teacher.wait_for_selector(f'[data-testid="quiz-ask"][data-question="{qid}"]:not([disabled])')
            ask.click()
            # the question shows on a browser phone first: a wait of Playwright's, during which the pages'
            # requests (the Ask's POST among them) pass the test's guard (GUARDED below)
            phones[1].page.wait_for_selector('[data-testid="quiz"] [data-testid="quiz-option-0"]')
            try:
                quiz_id = sockets[0].question()["id"]
            except TimeoutError:
                said = teacher.get_by_test_id("classroom-message").inner_text()
                raise AssertionError(
                    f"{qid}: no question reached the phones in {SLOW} s; the teacher's window says {said!r}, "
                    f"its errors {teacher_errors}; the windows' last requests:\n" + "\n".join(asked_server[-30:])
                ) from None
            for p in phones:
                p.page.wait_for_selector(f'[data-testid="quiz"][data-quiz="{quiz_id}"] [data-testid="quiz-option-0"]')
            projector.page.wait_for_selector(f'[data-testid="quiz"][data-quiz="{quiz_id}"]')
            # nothing on the projector or a phone gives the answer away; the teacher's window has the note
            for w in (projector, *phones):
                shown = text(w)
                for secret in [*give_aways(a), note_of(a)]:
                    assert secret not in shown, f"{qid}: {secret!r} shows on {w.base} before the reveal"
            assert note_of(a) in text(teacher)
            # seven votes, each counted once (the late phone answers after the reveal, at one question)
            late = qid == LATE
            n_options = len(a.options)
            choices = [(3 * n + 5 * k) % n_options for k in range(7)]
            if a.kind == "cell":  # every phone taps a cell of its own row: some right, some not
                choices = [(k % 5) * 5 + (k * 2 + n) % 5 for k in range(7)]
            for k, p in enumerate(phones):
                if late and k == 0:
                    continue
                p.page.get_by_test_id(f"quiz-option-{choices[k]}").click()
                p.page.wait_for_selector('[data-testid="quiz-result"][data-verdict="counted"]')
            for k, s in enumerate(sockets):
                choice = choices[len(phones) + k]
                assert s.vote(quiz_id, choice)["voted"]["choice"] == choice
            expected = 6 if late else 7
            teacher.wait_for_selector(f'[data-testid="quiz-result"][data-answered="{expected}"]')
            projector.page.wait_for_selector(f'[data-testid="quiz-result"][data-answered="{expected}"]')
            assert projector.text("quiz-result") == f"{expected} of 7 answered."
            assert projector.page.locator('[data-testid^="quiz-count-"]').count() == 0  # no counts before
            if late:
                held.holding = True
            teacher.get_by_test_id("quiz-reveal").click()
            projector.page.wait_for_selector('[data-testid="quiz"][data-revealed="true"]')
            counted = choices[1:] if late else choices
            sent.append(counted)
            right = set(a.right)
            for j in range(n_options):
                want = counted.count(j)
                got = projector.page.get_by_test_id(f"quiz-count-{j}").inner_text()
                assert got == str(want), f"{qid}: option {j} shows {got}, {want} voted"
            assert a.explain in projector.text("quiz-explain")
            if late:  # the held-back phone taps now: refused, and it says why
                late_phone = phones[0].page
                late_phone.get_by_test_id(f"quiz-option-{choices[0]}").click()
                late_phone.wait_for_selector('[data-testid="quiz-result"][data-verdict="refused"]')
                assert "Too late: the answer is out" in late_phone.get_by_test_id("quiz-result").inner_text()
                held.release()
                late_phone.wait_for_selector('[data-testid="quiz-result"][data-verdict="none"]')
            for k, p in enumerate(phones):
                if late and k == 0:
                    continue
                verdict = "right" if choices[k] in right else "wrong"
                p.page.wait_for_selector(f'[data-testid="quiz-result"][data-verdict="{verdict}"]')
            refused = sockets[0].vote(quiz_id, 0)["error"]  # a vote after the reveal: answered with the reason
            assert refused["type"] == "revealed" and "answer is out" in refused["msg"]
            teacher.get_by_test_id("quiz-end").click()
            for p in phones:
                p.page.wait_for_selector('[data-testid="quiz"]', state="hidden")
            teacher.wait_for_selector('[data-testid="quiz"]', state="hidden")

        # the class report: its CSV equals the votes sent, and it is kept for the lesson
        teacher.locator("[data-testid=room-menu] summary").click()
        teacher.wait_for_selector(f'[data-testid="class-report-row-{len(CHAPTERS)}"]')
        with teacher.expect_download() as download:
            teacher.get_by_test_id("quiz-csv").click()
        rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8-sig"))))
        assert [r["question"] for r in rows] == [q for q, _ in CHAPTERS]
        for row, (qid, _), counted in zip(rows, CHAPTERS, sent, strict=True):
            votes = [int(part.rsplit(": ", 1)[1]) for part in row["distribution"].split("; ")]
            assert votes == [counted.count(j) for j in range(len(asked[qid].options))], qid
            assert int(row["answered"]) == len(counted) and row["in_room"] == "7"
            assert int(row["right"]) == sum(c in asked[qid].right for c in counted)
        kept = api(base, "GET", f"/api/reports?lesson={lesson['id']}")
        assert [(r["questions"], r["lesson_title"]) for r in kept] == [(len(CHAPTERS), "Every chapter's question")]
        assert not teacher_errors, teacher_errors


def test_past_the_seats_of_one_address_a_phone_is_told_why(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Three phones behind one address, two seats allowed there: the third phone's answer is refused, on it
    (the first two are sockets from 127.0.0.1, the third a browser page; the count leaves the refused one out)."""
    with ExitStack() as stack:
        base, _ = stack.enter_context(app_process(tmp_path_factory.mktemp("seats"), ATTENTION_SEATS_PER_ADDRESS="2"))
        room = api(base, "POST", "/api/rooms")
        key = {"authorization": f"Bearer {room['presenter_key']}", "content-type": "application/json"}
        state = {"chapter": "steps", "example": CAT, "step": "softmax", "mask": "full", "focus": "3"}

        def call(method: str, path: str, body: Any = None) -> None:
            data = None if body is None else json.dumps(body).encode()
            urllib.request.urlopen(urllib.request.Request(base + path, data=data, method=method, headers=key)).close()

        call("PUT", f"/api/rooms/{room['code']}/state", state)
        sockets = [WsPhone(stack, base, room["code"], "127.0.0.1") for _ in range(2)]
        w = stack.enter_context(watched_page(browser, base))
        w.page.set_viewport_size({"width": 390, "height": 844})
        w.page.goto(f"{base}/?room={room['code']}")
        w.wait_ready(step="softmax")
        call("POST", f"/api/rooms/{room['code']}/quiz", {"question": "steps.share"})
        for s in sockets:
            quiz_id = s.question()["id"]
            assert s.vote(quiz_id, 3)["voted"]["choice"] == 3
        w.page.get_by_test_id("quiz-option-3").click()
        w.page.wait_for_selector('[data-testid="quiz-result"][data-verdict="refused"]')
        refusal = w.text("quiz-result")
        assert "Not counted: 2 phones on this network answer in this room already" in refusal
        assert w.page.get_by_test_id("quiz-option-0").is_enabled()  # nothing was counted: it may try again
        call("POST", f"/api/rooms/{room['code']}/quiz/reveal")
        w.page.wait_for_selector('[data-testid="quiz-result"][data-verdict="none"]')
        for s in sockets:
            while "answer" not in (revealed := s.next("quiz")["quiz"] or {}):
                pass
            counts = revealed["counts"]
            assert counts[3] == sum(counts) == 2 and 3 in revealed["answer"]["right"], revealed
