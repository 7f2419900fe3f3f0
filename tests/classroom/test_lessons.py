"""Saved lessons: the API's statuses, SQLite (WAL, schema version, migrations), and kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import urllib.request
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.classroom import limits, store
from tests.classroom.conftest import TOKEN, app_process, auth

CAT = {"chapter": "steps", "example": "the-cat-ate-its-fish", "focus": "3"}
LESSON = {
    "title": "Its → cat",
    "views": [
        {"state": {**CAT, "step": "score"}, "note": "q·k"},
        {"state": {**CAT, "step": "softmax"}, "note": ""},
    ],
}


def test_the_ready_made_lesson_follows_seed_003(client: TestClient) -> None:
    lessons = client.get("/api/lessons").json()
    assert len(lessons) == 1 and "the cat ate its fish" in lessons[0]["title"]
    lesson = client.get(f"/api/lessons/{lessons[0]['id']}").json()
    steps = [v["state"].get("step") for v in lesson["views"] if v["state"].get("chapter") == "steps"]
    assert steps == ["score", "scale", "softmax", "mix"]
    chapters = [v["state"]["chapter"] for v in lesson["views"]]
    assert chapters.index("rnn") < chapters.index("projections") < chapters.index("steps") < chapters.index("masks")
    assert all(v["note"] for v in lesson["views"])


def test_lesson_crud_and_statuses(client: TestClient) -> None:
    assert client.post("/api/lessons", json=LESSON).status_code == 401
    assert client.post("/api/lessons", json=LESSON, headers=auth("nope" * 8)).status_code == 403
    r = client.post("/api/lessons", json=LESSON, headers=auth(TOKEN))
    assert r.status_code == 201
    lesson_id = r.json()["id"]
    got = client.get(f"/api/lessons/{lesson_id}").json()
    assert got["title"] == LESSON["title"] and got["views"] == LESSON["views"]
    assert [row["views"] for row in client.get("/api/lessons").json()][-1] == 2
    changed = {"title": "Renamed", "views": LESSON["views"][:1]}
    assert client.put(f"/api/lessons/{lesson_id}", json=changed).status_code == 401
    assert client.put(f"/api/lessons/{lesson_id}", json=changed, headers=auth(TOKEN)).status_code == 204
    assert client.get(f"/api/lessons/{lesson_id}").json()["views"] == changed["views"]
    assert client.put("/api/lessons/999999", json=changed, headers=auth(TOKEN)).status_code == 404
    assert client.delete(f"/api/lessons/{lesson_id}").status_code == 401
    assert client.delete(f"/api/lessons/{lesson_id}", headers=auth("x" * 20)).status_code == 403
    assert client.delete(f"/api/lessons/{lesson_id}", headers=auth(TOKEN)).status_code == 204
    assert client.get(f"/api/lessons/{lesson_id}").status_code == 404
    assert client.delete(f"/api/lessons/{lesson_id}", headers=auth(TOKEN)).status_code == 404
    assert client.get("/api/lessons/0").status_code == 422


def test_bad_lessons_name_the_field(client: TestClient) -> None:
    def post(body: Any) -> Any:
        return client.post("/api/lessons", json=body, headers=auth(TOKEN))

    r = post({"title": "", "views": LESSON["views"]})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "title"]
    r = post({"title": "t", "views": []})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "views"]
    r = post({"title": "t", "views": [{"state": {"mask": "diagonal"}, "note": ""}]})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "views", 0, "state", "mask"]
    r = post({"title": "t", "views": [{"state": {}, "note": "n" * (limits.MAX_NOTE_CHARS + 1)}]})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "views", 0, "note"]
    r = post({"title": "t", "views": [{"state": {}, "note": ""}] * (limits.MAX_LESSON_VIEWS + 1)})
    assert r.status_code == 422 and "200" in r.json()["detail"][0]["msg"]
    big = {"title": "t", "views": [{"state": {"sentence": "s" * 4000}, "note": "n" * 2000}] * 180}
    r = post(big)
    assert r.status_code == 413 and "1,048,576 bytes" in r.json()["detail"][0]["msg"]


def test_store_is_wal_with_a_schema_version(tmp_path: Path) -> None:
    s = store.Store(tmp_path)
    assert s.version() == len(store.MIGRATIONS)
    s.close()
    db = sqlite3.connect(tmp_path / store.FILENAME)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT version FROM schema_version").fetchall() == [(len(store.MIGRATIONS),)]


def test_migrations_upgrade_a_version_1_database(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / store.FILENAME)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    db.execute("INSERT INTO schema_version VALUES (1)")
    first = store.MIGRATIONS[0]
    assert isinstance(first, str)
    db.execute(first)
    db.execute("INSERT INTO lessons (title, views, created, updated) VALUES ('old', '[]', 'then', 'then')")
    db.commit()
    db.close()
    s = store.Store(tmp_path)
    assert s.version() == len(store.MIGRATIONS)
    titles = [row["title"] for row in s.lessons()]
    assert titles[0] == "old" and "the cat ate its fish" in titles[1]  # kept, and the ready-made one added
    s.save_room("ABCDEF", "digest")  # migration 2 made the rooms table
    assert s.load_room("ABCDEF") == ("digest", None, 0)
    s.close()
    again = store.Store(tmp_path)  # opening again migrates nothing
    assert len(again.lessons()) == 2
    again.close()


def test_a_saved_lesson_survives_kill_9(tmp_path: Path) -> None:
    body = json.dumps(LESSON).encode()
    with app_process(tmp_path) as (base, proc):
        request = urllib.request.Request(
            base + "/api/lessons", data=body, method="POST", headers={**auth(TOKEN), "content-type": "application/json"}
        )
        with urllib.request.urlopen(request) as r:
            assert r.status == 201
            lesson_id = json.loads(r.read())["id"]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    with app_process(tmp_path) as (base, _), urllib.request.urlopen(f"{base}/api/lessons/{lesson_id}") as r:
        saved = json.loads(r.read())
    assert saved["title"] == LESSON["title"] and saved["views"] == LESSON["views"]
