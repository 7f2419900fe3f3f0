"""The class quiz through the API: questions asked about the room's view with the server's answer, votes per
seat (many phones behind one address), every refused vote answered with its reason, the reveal, the class
report (its CSV equals the votes sent; kept in SQLite and PostgreSQL across a restart), and Redis."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.classroom import database, limits, questions
from app.main import create_app
from tests.classroom.conftest import TOKEN, auth
from tests.postgres import PostgresServer

ROOT = Path(__file__).resolve().parents[2]
CAT = {"chapter": "steps", "example": "the-cat-ate-its-fish", "step": "softmax", "mask": "full", "focus": "3"}
T = auth(TOKEN)
FOLLOWER = ["attention3d.follower"]


def next_with(ws: Any, field: str) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = ws.receive_json()
        if field in message:
            return message


def answer_to(ws: Any) -> dict[str, Any]:
    """The next answer to this socket's own vote: {"voted": …} or {"error": …}."""
    while True:
        message: dict[str, Any] = ws.receive_json()
        if "voted" in message or "error" in message:
            return message


def put(client: TestClient, room: dict[str, Any], state: dict[str, Any]) -> None:
    r = client.put(f"/api/rooms/{room['code']}/state", json=state, headers=auth(room["presenter_key"]))
    assert r.status_code == 204, r.text


def ask(client: TestClient, room: dict[str, Any], question: str) -> str:
    r = client.post(f"/api/rooms/{room['code']}/quiz", json={"question": question}, headers=auth(room["presenter_key"]))
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def reveal(client: TestClient, room: dict[str, Any]) -> dict[str, Any]:
    r = client.post(f"/api/rooms/{room['code']}/quiz/reveal", headers=auth(room["presenter_key"]))
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def follower(client: TestClient, code: str, seat: str | None = None) -> Any:
    offered = FOLLOWER + ([f"seat.{seat}"] if seat else [])
    return client.websocket_connect(f"/api/rooms/{code}/ws", subprotocols=offered)


def presenter(client: TestClient, room: dict[str, Any]) -> Any:
    protocols = ["attention3d.presenter", f"key.{room['presenter_key']}"]
    return client.websocket_connect(f"/api/rooms/{room['code']}/ws", subprotocols=protocols)


def test_the_catalogue_names_every_question_and_no_answer(client: TestClient) -> None:
    listed = client.get("/api/questions").json()
    registry = (ROOT / "static/js/chapters/index.js").read_text(encoding="utf-8")
    chapters = re.findall(r'\{ id: "([a-z-]+)"', registry)
    assert len(chapters) >= 12
    assert {q["chapter"] for q in listed} == set(chapters)  # every chapter has a question
    for q in listed:
        assert set(q) == {"id", "chapter", "steps", "kind", "title"}
        assert q["kind"] in ("word", "range", "number", "cell") and q["steps"]
        module = (ROOT / f"static/js/chapters/{q['chapter']}.js").read_text(encoding="utf-8")
        # a step is `{ id: "…", …}` or `step("…", {…})` (its words from the catalogs), or a projection's
        found = re.findall(r'\bid: "([a-z-]+)"|\bstep\("([a-z-]+)"|projectionStep\("([a-z])"\)', module)
        stage_ids = {"".join(ids) for ids in found} | {"score", "scale", "mask", "softmax", "mix"}  # (steps: stages.js)
        assert set(q["steps"]) <= stage_ids, q  # asked at steps the chapter has
    assert {q["kind"] for q in listed} == {"word", "range", "number", "cell"}


def test_a_question_about_the_rooms_view_with_the_servers_answer(client: TestClient, room: dict[str, Any]) -> None:
    code, key = room["code"], room["presenter_key"]
    path = f"/api/rooms/{code}/quiz"
    assert client.post(path, json={"question": "steps.share"}).status_code == 401
    r = client.post(path, json={"question": "steps.share"}, headers=auth(key))
    assert r.status_code == 409 and r.json()["detail"][0]["type"] == "no_view"
    put(client, room, {**CAT, "step": "score"})
    r = client.post(path, json={"question": "steps.share"}, headers=auth(key))
    assert r.status_code == 409 and "the class is at 'steps', 'score'" in r.json()["detail"][0]["msg"]
    r = client.post(path, json={"question": "nope.none"}, headers=auth(key))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "question"]
    r = client.post(path, json={"question": "steps.share", "answer": 3}, headers=auth(key))
    assert r.status_code == 422  # the page never sends an answer
    assert client.post(f"{path}/reveal", headers=auth(key)).status_code == 409  # nothing to reveal
    put(client, room, CAT)
    with follower(client, code) as a, presenter(client, room) as teacher:
        a.receive_json()
        teacher.receive_json()
        quiz_id = ask(client, room, "steps.share")
        asked = next_with(a, "quiz")["quiz"]
        # the question and its options; nothing of the answer
        assert asked["text"] == "“its” scores “cat” highest. About how much of the attention of “its” goes to “cat”?"
        assert asked["options"][3] == "more than three quarters" and asked["kind"] == "range"
        assert not {"secret", "answer", "counts", "value", "right"} & set(asked)
        assert "0.895" not in json.dumps(asked) and "0.8952" not in json.dumps(next_with(teacher, "quiz"))
        a.send_json({"vote": {"quiz": quiz_id, "choice": 3}})
        assert answer_to(a) == {"voted": {"quiz": quiz_id, "choice": 3}}
        shown = reveal(client, room)
        assert shown["answer"]["right"] == [3] and shown["counts"] == [0, 0, 0, 1]
        assert abs(shown["answer"]["value"] - 0.8952646599) < 1e-9 and "0.895" in shown["answer"]["explain"]
        assert "secret" not in shown
        assert next_with(a, "quiz")["quiz"]["answer"]["right"] == [3]
    r = client.post(f"{path}/reveal", headers=auth(key))
    assert r.status_code == 409 and r.json()["detail"][0]["type"] == "revealed"  # the answer cannot change


def test_every_vote_counts_once_behind_one_address_and_each_refusal_says_why(
    client: TestClient, room: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TestClient's sockets all come from one address, as a class behind a school's NAT."""
    code = room["code"]
    put(client, room, CAT)
    with follower(client, code) as a, follower(client, code) as b, follower(client, code) as c:
        seats = [ws.receive_json()["seat"] for ws in (a, b, c)]
        assert len(set(seats)) == 3
        with presenter(client, room) as teacher:
            teacher.receive_json()
            quiz_id = ask(client, room, "steps.share")
            assert next_with(teacher, "votes")["votes"] == {"id": quiz_id, "answered": 0}
            for ws, choice in ((a, 3), (b, 2), (c, 3)):
                ws.send_json({"vote": {"quiz": quiz_id, "choice": choice}})
                assert answer_to(ws)["voted"] == {"quiz": quiz_id, "choice": choice}
            assert next_with(teacher, "votes")["votes"]["answered"] >= 1
            # each refusal is answered on that socket, with its reason
            a.send_json({"vote": {"quiz": quiz_id, "choice": 0}})
            again = answer_to(a)["error"]
            assert again["type"] == "voted" and again["choice"] == 3  # the page learns its counted vote
            b.send_json({"vote": {"quiz": quiz_id, "choice": 4}})
            assert answer_to(b)["error"]["type"] == "vote"
            b.send_json({"vote": {"quiz": quiz_id, "choice": True}})  # a boolean is not an option's number
            assert answer_to(b)["error"]["type"] == "vote"
            b.send_json({"vote": {"quiz": "other", "choice": 1}})
            assert answer_to(b)["error"]["type"] == "no_quiz"
            teacher.send_json({"vote": {"quiz": quiz_id, "choice": 2}})  # the presenter does not vote
            assert next_with(teacher, "error")["error"]["type"] == "read_only"
            shown = reveal(client, room)
            assert shown["counts"] == [0, 0, 1, 2]  # three phones behind one address: three votes
        # a page that reconnects with its seat keeps its vote, and hears it again
        with follower(client, code, seats[1]) as b2:
            hello = b2.receive_json()
            assert hello["seat"] == seats[1] and hello["yours"] == {"quiz": quiz_id, "choice": 2}
            b2.send_json({"vote": {"quiz": quiz_id, "choice": 3}})
            late = answer_to(b2)["error"]
            assert late["type"] == "revealed" and "answer is out" in late["msg"]
        with follower(client, code, seats[1][:-1] + "x") as forged:  # a seat this server did not sign
            assert forged.receive_json()["seat"] != seats[1]


def test_the_seats_of_one_address_are_capped(
    client: TestClient, room: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(limits.SEATS_PER_ADDRESS_ENV, "2")
    put(client, room, CAT)
    quiz_id = ask(client, room, "steps.share")
    with follower(client, room["code"]) as a, follower(client, room["code"]) as b, follower(client, room["code"]) as c:
        for ws in (a, b, c):
            ws.receive_json()
        for ws in (a, b):
            ws.send_json({"vote": {"quiz": quiz_id, "choice": 1}})
            assert "voted" in answer_to(ws)
        c.send_json({"vote": {"quiz": quiz_id, "choice": 1}})
        refused = answer_to(c)["error"]
        assert refused["type"] == "seat_cap" and "2 phones on this network" in refused["msg"]
        # a seated page votes in the next question too
        second = ask(client, room, "steps.share")
        a.send_json({"vote": {"quiz": second, "choice": 0}})
        assert "voted" in answer_to(a)
    assert reveal(client, room)["counts"] == [1, 0, 0, 0]


def test_one_vote_per_address_when_asked_for(
    client: TestClient, room: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(limits.VOTES_PER_ADDRESS_ENV, "1")
    put(client, room, CAT)
    quiz_id = ask(client, room, "steps.share")
    with follower(client, room["code"]) as a, follower(client, room["code"]) as b:
        a.receive_json()
        b.receive_json()
        a.send_json({"vote": {"quiz": quiz_id, "choice": 1}})
        assert "voted" in answer_to(a)
        b.send_json({"vote": {"quiz": quiz_id, "choice": 1}})
        assert "one vote per address" in answer_to(b)["error"]["msg"]


def test_a_cell_question_counts_cells(client: TestClient, room: dict[str, Any]) -> None:
    put(client, room, {"chapter": "masks", "example": "the-cat-ate-its-fish", "step": "full", "mask": "full"})
    quiz_id = ask(client, room, "masks.zero")
    with follower(client, room["code"]) as a, follower(client, room["code"]) as b:
        hello = a.receive_json()
        b.receive_json()
        assert hello["quiz"]["kind"] == "cell" and hello["quiz"]["grid"]["rows"] == ["the", "cat", "ate", "its", "fish"]
        a.send_json({"vote": {"quiz": quiz_id, "choice": 0 * 5 + 4}})  # the → fish: hidden by the causal mask
        b.send_json({"vote": {"quiz": quiz_id, "choice": 4 * 5 + 0}})  # fish → the: visible
        assert "voted" in answer_to(a) and "voted" in answer_to(b)
    shown = reveal(client, room)
    assert shown["answer"]["right"] == [i * 5 + j for i in range(5) for j in range(5) if j > i]
    r = client.get(f"/api/rooms/{room['code']}/quiz/summary", headers=auth(room["presenter_key"])).json()
    row = r["rows"][0]
    assert (row["answered"], row["correct"], row["common_wrong"]) == (2, 1, "fish → the")


def test_the_deck_reaches_presenters_only(client: TestClient, room: dict[str, Any]) -> None:
    path = f"/api/rooms/{room['code']}/deck"
    deck = {"lesson": 3, "title": "Its → cat", "index": 4, "count": 12}
    assert client.put(path, json=deck).status_code == 401
    with follower(client, room["code"]) as a, presenter(client, room) as teacher:
        a.receive_json()
        teacher.receive_json()
        r = client.put(path, json=deck, headers=auth(room["presenter_key"]))
        assert r.status_code == 204
        assert next_with(teacher, "deck")["deck"] == deck
        a.send_json({"ping": 1})
        assert a.receive_json() == {"pong": 1}  # the follower heard nothing of it
    with presenter(client, room) as again:
        assert again.receive_json()["deck"] == deck
    with follower(client, room["code"]) as late:
        assert "deck" not in late.receive_json()


# the class report


def script(client: TestClient, room: dict[str, Any], lesson: int | None = None) -> list[tuple[str, list[int]]]:
    """A scripted lesson: the same question before and after (pre, post), a word question in between, one left
    unrevealed. Returns (question, choices voted) per question, in order."""
    code, key = room["code"], room["presenter_key"]
    if lesson is not None:
        deck = {"lesson": lesson, "title": "Its → cat", "index": 0, "count": 3}
        assert client.put(f"/api/rooms/{code}/deck", json=deck, headers=auth(key)).status_code == 204
    plan = [
        ("steps.share", CAT, [0, 1, 3, 1]),  # before the lesson: one right of four
        ("positions.moved", {"chapter": "positions", "step": "plain"}, [4, 1, 4]),
        ("steps.share", CAT, [3, 3, 3, 2]),  # after: three of four
        ("masks.split", {"chapter": "masks", "example": "the-cat-ate-its-fish", "step": "causal", "focus": "1"}, [2]),
    ]
    done = []
    with (
        follower(client, code) as a,
        follower(client, code) as b,
        follower(client, code) as c,
        follower(client, code) as d,
    ):
        phones = [a, b, c, d]
        for ws in phones:
            ws.receive_json()
        for n, (question, state, choices) in enumerate(plan):
            put(client, room, state)
            quiz_id = ask(client, room, question)
            for ws, choice in zip(phones, choices, strict=False):
                ws.send_json({"vote": {"quiz": quiz_id, "choice": choice}})
                assert "voted" in answer_to(ws)
            if n < len(plan) - 1:
                reveal(client, room)
            done.append((question, choices))
        assert client.delete(f"/api/rooms/{code}/quiz", headers=auth(key)).status_code == 204
    return done


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))


def test_the_reports_csv_equals_the_votes_sent(client: TestClient, room: dict[str, Any]) -> None:
    sent = script(client, room)
    key = auth(room["presenter_key"])
    r = client.get(f"/api/rooms/{room['code'].lower()}/quiz/summary.csv", headers=key)
    assert r.status_code == 200 and r.headers["content-type"] == "text/csv; charset=utf-8"
    assert r.headers["content-disposition"] == f'attachment; filename="class-{room["code"]}.csv"'
    rows = csv_rows(r.content.decode("utf-8-sig"))
    assert len(rows) == len(sent)
    for row, (question, choices) in zip(rows, sent, strict=True):
        options = questions_options(row)
        counted = [int(part.rsplit(": ", 1)[1]) for part in row["distribution"].split("; ")]
        assert counted == [choices.count(i) for i in range(len(options))], row
        assert (row["question"], int(row["answered"])) == (question, len(choices))
    share_pre, moved, share_post, split = rows
    assert (share_pre["right"], share_pre["percent_right"], share_pre["pre_post"]) == ("1", "25.0", "pre")
    assert (share_post["right"], share_post["percent_right"], share_post["pre_post"]) == ("3", "75.0", "post")
    assert share_post["change"] == "50.0" and share_pre["change"] == ""
    assert share_pre["most_common_wrong"] == "a quarter to a half" and share_pre["most_common_wrong_count"] == "2"
    assert (moved["answer"], moved["right"], moved["most_common_wrong"]) == ("cat", "2", "fish")
    assert (split["revealed"], split["answer"], split["right"]) == ("no", "0.5", "1")  # computed, not shown
    assert all(row["chapter"] and row["step"] and row["in_room"] == "4" for row in rows)
    summary = client.get(f"/api/rooms/{room['code']}/quiz/summary", headers=key).json()
    assert summary["totals"] == {"questions": 4, "answers": 12, "correct": 7, "percent_right": 58.3}
    assert all(row["median_seconds"] is not None for row in summary["rows"])


def questions_options(row: dict[str, str]) -> list[str]:
    return [part.rsplit(": ", 1)[0] for part in row["distribution"].split("; ")]


@pytest.fixture(params=["sqlite", "postgresql"])
def data(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ATTENTION_TEACHER_TOKEN", TOKEN)
    monkeypatch.setenv("ATTENTION_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("ATTENTION_REDIS_URL", raising=False)
    if request.param == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres")
        monkeypatch.setenv(database.URL_ENV, server.new_database())
    else:
        monkeypatch.delenv(database.URL_ENV, raising=False)
    yield


def test_the_report_is_kept_per_lesson_and_survives_a_restart(data: None) -> None:
    with TestClient(create_app(backend="numpy")) as client:
        lesson = client.post("/api/lessons", json={"title": "Its → cat", "views": [{"state": CAT}]}, headers=T).json()
        room = client.post("/api/rooms", headers=T).json()
        sent = script(client, room, lesson["id"])
        assert client.delete(f"/api/rooms/{room['code']}", headers=auth(room["presenter_key"])).status_code == 204
    with TestClient(create_app(backend="numpy")) as client:  # a restarted server, the room closed
        assert client.get("/api/reports").status_code == 401
        listed = client.get(f"/api/reports?lesson={lesson['id']}", headers=T).json()
        assert len(listed) == 1
        kept = listed[0]
        assert (kept["room"], kept["lesson_id"], kept["lesson_title"], kept["questions"]) == (
            room["code"],
            lesson["id"],
            "Its → cat",
            4,
        )
        assert client.get("/api/reports?lesson=999", headers=T).json() == []
        report = client.get(f"/api/reports/{kept['id']}", headers=T).json()
        assert [r["question"] for r in report["rows"]] == [q for q, _ in sent]
        assert [r["counts"][r["right"][0]] for r in report["rows"]] == [1, 2, 3, 1]
        r = client.get(f"/api/reports/{kept['id']}.csv", headers=T)
        assert r.status_code == 200 and [row["answered"] for row in csv_rows(r.content.decode("utf-8-sig"))] == [
            "4",
            "3",
            "4",
            "1",
        ]
        assert client.get("/api/reports/999", headers=T).status_code == 404
        assert client.get("/api/reports/999.csv", headers=T).status_code == 404


def test_reset_starts_a_new_class_report(client: TestClient, room: dict[str, Any]) -> None:
    key = auth(room["presenter_key"])
    put(client, room, CAT)
    ask(client, room, "steps.share")
    reveal(client, room)
    assert client.post(f"/api/rooms/{room['code']}/reset", headers=key).status_code == 204
    assert client.get(f"/api/rooms/{room['code']}/quiz/summary", headers=key).json()["rows"] == []
    ask(client, room, "steps.share")
    reveal(client, room)
    assert [r["questions"] for r in client.get("/api/reports", headers=T).json()] == [1, 1]


def test_the_quiz_through_redis(tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seats, votes, the refusals, the reveal and the report when the rooms live in Redis."""
    monkeypatch.setenv("ATTENTION_TEACHER_TOKEN", TOKEN)
    monkeypatch.setenv("ATTENTION_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ATTENTION_REDIS_URL", redis_url)
    monkeypatch.setenv(limits.SEATS_PER_ADDRESS_ENV, "2")
    with TestClient(create_app(backend="numpy")) as client:
        room = client.post("/api/rooms", headers=T).json()
        code = room["code"]
        put(client, room, CAT)
        with follower(client, code) as a, follower(client, code) as b, follower(client, code) as c:
            seats = [ws.receive_json()["seat"] for ws in (a, b, c)]
            quiz_id = ask(client, room, "steps.share")
            for ws, choice in ((a, 3), (b, 1)):
                ws.send_json({"vote": {"quiz": quiz_id, "choice": choice}})
                assert "voted" in answer_to(ws)
            a.send_json({"vote": {"quiz": quiz_id, "choice": 1}})
            assert answer_to(a)["error"]["choice"] == 3
            c.send_json({"vote": {"quiz": quiz_id, "choice": 3}})
            assert answer_to(c)["error"]["type"] == "seat_cap"
            assert reveal(client, room)["counts"] == [0, 1, 0, 1]
        with follower(client, code, seats[0]) as again:
            assert again.receive_json()["yours"] == {"quiz": quiz_id, "choice": 3}
        rows = client.get(f"/api/rooms/{code}/quiz/summary", headers=auth(room["presenter_key"])).json()["rows"]
        assert [(r["answered"], r["correct"]) for r in rows] == [(2, 1)]
        assert [r["questions"] for r in client.get("/api/reports", headers=T).json()] == [1]


def test_every_question_has_a_step_in_its_chapter() -> None:
    for q in questions.QUESTIONS.values():
        assert q.steps and q.kind in ("word", "range", "number", "cell")
