"""Saved lessons on both databases (SQLite and a real PostgreSQL): the API's statuses, the list (pages,
summary columns, the teacher's order), editing, export/import, limits, migrations, kill -9, file modes."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
import stat
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.classroom import database, limits, store
from app.main import create_app
from tests.classroom.conftest import TOKEN, app_process, auth
from tests.classroom.store_process import open_and_add
from tests.postgres import PostgresServer

CAT = {"chapter": "steps", "example": "the-cat-ate-its-fish", "focus": "3"}
LESSON: dict[str, Any] = {
    "title": "Its → cat",
    "views": [
        {"state": {**CAT, "step": "score"}, "note": "q·k"},
        {"state": {**CAT, "step": "softmax"}, "note": ""},
    ],
}
T = auth(TOKEN)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """None: the data folder's SQLite file (the default); else a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_database()


@pytest.fixture
def lessons(tmp_path: Path, db_url: str | None, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("ATTENTION_TEACHER_TOKEN", TOKEN)
    monkeypatch.setenv("ATTENTION_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("ATTENTION_REDIS_URL", raising=False)
    if db_url:
        monkeypatch.setenv(database.URL_ENV, db_url)
    else:
        monkeypatch.delenv(database.URL_ENV, raising=False)
    with TestClient(create_app(backend="numpy")) as c:
        yield c


def edit(client: TestClient, lesson_id: int, body: Any) -> Any:
    """PUT the lesson as the page does: with the ETag of the version it read."""
    tag = client.get(f"/api/lessons/{lesson_id}", headers=T).headers["etag"]
    return client.put(f"/api/lessons/{lesson_id}", json=body, headers={**T, "if-match": tag})


def raw(client: TestClient) -> database.Database:
    """The database under the app (to look behind the API)."""
    from app.classroom.service import classroom

    return classroom(client.app).store.db


def test_the_ready_made_lesson_follows_seed_003(lessons: TestClient) -> None:
    listed = lessons.get("/api/lessons", headers=T).json()
    assert len(listed) == 1 and "the cat ate its fish" in listed[0]["title"] and listed[0]["views"] == 12
    lesson = lessons.get(f"/api/lessons/{listed[0]['id']}", headers=T).json()
    steps = [v["state"].get("step") for v in lesson["views"] if v["state"].get("chapter") == "steps"]
    assert steps == ["score", "scale", "softmax", "mix"]
    chapters = [v["state"]["chapter"] for v in lesson["views"]]
    assert chapters.index("rnn") < chapters.index("projections") < chapters.index("steps") < chapters.index("masks")
    assert all(v["note"] for v in lesson["views"])


def test_lesson_crud_and_statuses(lessons: TestClient) -> None:
    client = lessons
    assert client.post("/api/lessons", json=LESSON).status_code == 401
    assert client.post("/api/lessons", json=LESSON, headers=auth("nope" * 8)).status_code == 403
    r = client.post("/api/lessons", json=LESSON, headers=T)
    assert r.status_code == 201
    lesson_id = r.json()["id"]
    # reading needs the teacher token too: students get the views through the room
    for path in ("/api/lessons", f"/api/lessons/{lesson_id}"):
        r = client.get(path)
        assert r.status_code == 401 and r.json()["detail"][0]["loc"] == ["header", "authorization"]
        assert client.get(path, headers=auth("x" * 20)).status_code == 403
    got = client.get(f"/api/lessons/{lesson_id}", headers=T).json()
    assert got["title"] == LESSON["title"] and got["views"] == LESSON["views"]
    assert [row["views"] for row in client.get("/api/lessons", headers=T).json()][-1] == 2
    changed = {"title": "Renamed", "views": LESSON["views"][:1]}
    assert client.put(f"/api/lessons/{lesson_id}", json=changed).status_code == 401
    assert edit(client, lesson_id, changed).status_code == 204
    assert client.get(f"/api/lessons/{lesson_id}", headers=T).json()["views"] == changed["views"]
    assert client.get("/api/lessons", headers=T).json()[-1] | {"updated": ""} == {
        "id": lesson_id,
        "title": "Renamed",
        "views": 1,
        "updated": "",
    }
    assert client.put("/api/lessons/999999", json=changed, headers={**T, "if-match": "*"}).status_code == 404
    assert client.delete(f"/api/lessons/{lesson_id}").status_code == 401
    assert client.delete(f"/api/lessons/{lesson_id}", headers=auth("x" * 20)).status_code == 403
    assert client.delete(f"/api/lessons/{lesson_id}", headers=T).status_code == 204
    assert client.get(f"/api/lessons/{lesson_id}", headers=T).status_code == 404
    assert client.delete(f"/api/lessons/{lesson_id}", headers=T).status_code == 404
    assert client.get("/api/lessons/0", headers=T).status_code == 422


def test_edit_reorder_and_delete_views(lessons: TestClient) -> None:
    """What the page's editor sends: the lesson with its views renamed, moved and removed."""
    views: list[dict[str, Any]] = [{"state": {**CAT, "step": s}, "note": s} for s in ("score", "scale", "mix")]
    lesson_id = lessons.post("/api/lessons", json={"title": "Three", "views": views}, headers=T).json()["id"]
    edited = {"title": "Two, edited", "views": [{**views[2], "note": "mix first"}, views[0]]}
    assert edit(lessons, lesson_id, edited).status_code == 204
    got = lessons.get(f"/api/lessons/{lesson_id}", headers=T).json()
    assert [(v["state"]["step"], v["note"]) for v in got["views"]] == [("mix", "mix first"), ("score", "score")]
    assert lessons.get("/api/lessons", headers=T).json()[-1]["views"] == 2


def test_two_stale_edits_one_is_refused(lessons: TestClient) -> None:
    """Two tabs read version 1 and both save: the second gets 412 with the current version, and the
    first one's change is still there (nothing lost without a word). Without If-Match: 428."""
    lesson_id = lessons.post("/api/lessons", json=LESSON, headers=T).json()["id"]
    path = f"/api/lessons/{lesson_id}"
    read = lessons.get(path, headers=T)
    assert read.headers["etag"] == '"1"' and read.json()["version"] == 1
    assert read.headers["cache-control"] == "no-store"
    first = {**LESSON, "title": "Tab one"}
    second = {**LESSON, "title": "Tab two"}
    r = lessons.put(path, json=first, headers={**T, "if-match": '"1"'})
    assert r.status_code == 204 and r.headers["etag"] == '"2"'
    r = lessons.put(path, json=second, headers={**T, "if-match": '"1"'})
    assert r.status_code == 412 and r.headers["etag"] == '"2"'
    error = r.json()["detail"][0]
    assert error["loc"] == ["header", "if-match"] and error["type"] == "stale"
    assert "version 2" in error["msg"] and 'If-Match: "2"' in error["msg"]
    assert lessons.get(path, headers=T).json()["title"] == "Tab one"
    r = lessons.put(path, json=second)
    assert r.status_code == 401  # the token first
    r = lessons.put(path, json=second, headers=T)
    assert r.status_code == 428 and r.json()["detail"][0]["loc"] == ["header", "if-match"]
    for tag in ('W/"2"', '"02x"', "2", '"1", "3"'):  # weak, made up, unquoted, a list of stale ones
        assert lessons.put(path, json=second, headers={**T, "if-match": tag}).status_code == 412, tag
    r = lessons.put(path, json=second, headers={**T, "if-match": '"1", "2"'})  # a list naming the current one
    assert r.status_code == 204 and r.headers["etag"] == '"3"'
    assert lessons.put(path, json=first, headers={**T, "if-match": "*"}).headers["etag"] == '"4"'  # any version
    got = lessons.get(path, headers=T).json()
    assert (got["title"], got["version"]) == ("Tab one", 4)
    # a delete may name the version it saw too
    r = lessons.delete(path, headers={**T, "if-match": '"3"'})
    assert r.status_code == 412 and r.headers["etag"] == '"4"'
    assert lessons.delete(path, headers={**T, "if-match": '"4"'}).status_code == 204


def test_titles_and_notes_are_plain_text(lessons: TestClient) -> None:
    """NUL, other control characters, ESC, DEL, C1, direction overrides: 422 naming the field, on both
    databases (PostgreSQL's driver failed with a 500 on a NUL). Tabs and new lines are a note's."""
    view = LESSON["views"][0]
    bad_titles = [
        "a\x00b",
        "\x1b[31mred",
        "two\nlines",
        "two\rlines",
        "x\x7f",
        "x\x85",
        "\u202egnp.exe",
        "a\u2066b",
        " \t\u3000 ",
    ]
    for title in bad_titles:
        r = lessons.post("/api/lessons", json={"title": title, "views": [view]}, headers=T)
        assert r.status_code == 422, title
        assert r.json()["detail"][0]["loc"] == ["body", "title"], title
    r = lessons.post("/api/lessons", json={"title": "a\x00b", "views": [view]}, headers=T)
    assert "(U+0000) at character 2" in r.json()["detail"][0]["msg"]
    for note in ("a\x00", "\x1b]8;;x", "a\r\nb", "\u202d"):
        body = {"title": "t", "views": [view, {**view, "note": note}]}
        r = lessons.post("/api/lessons", json=body, headers=T)
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "views", 1, "note"], note
    lesson_id = lessons.post("/api/lessons", json=LESSON, headers=T).json()["id"]
    r = lessons.put(f"/api/lessons/{lesson_id}", json={**LESSON, "title": "\x00"}, headers={**T, "if-match": "*"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "title"]
    # what a teacher writes is kept to the character: accents, scripts, emoji, a tab, new lines in notes
    fine: dict[str, Any] = {"title": "Ça\tmarche — 注意 🐱 مرحبا", "views": [{**view, "note": "line one\n\tline two ‏"}]}
    lesson_id = lessons.post("/api/lessons", json=fine, headers=T).json()["id"]
    got = lessons.get(f"/api/lessons/{lesson_id}", headers=T).json()
    assert (got["title"], got["views"][0]["note"]) == (fine["title"], fine["views"][0]["note"])


def test_reorder_lessons(lessons: TestClient) -> None:
    ids = [lessons.post("/api/lessons", json={**LESSON, "title": t}, headers=T).json()["id"] for t in "ABC"]
    ready = lessons.get("/api/lessons", headers=T).json()[0]["id"]

    def titles() -> list[str]:
        return [row["title"][:1] for row in lessons.get("/api/lessons", headers=T).json()]

    assert titles() == ["S", "A", "B", "C"]
    body = {"ids": [ids[2], ids[0]]}  # C and A swap places; the others stay
    assert lessons.put("/api/lessons/order", json=body).status_code == 401
    assert lessons.put("/api/lessons/order", json=body, headers=T).status_code == 204
    assert titles() == ["S", "C", "B", "A"]
    assert lessons.put("/api/lessons/order", json={"ids": [ids[1], ready]}, headers=T).status_code == 204
    assert titles() == ["B", "C", "S", "A"]
    r = lessons.put("/api/lessons/order", json={"ids": [ids[0], 999999]}, headers=T)
    assert r.status_code == 404 and "999999" in r.json()["detail"][0]["msg"]
    r = lessons.put("/api/lessons/order", json={"ids": [ids[0], ids[0]]}, headers=T)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "ids"]
    assert titles() == ["B", "C", "S", "A"]  # a refused order changes nothing


def test_the_list_pages_and_never_reads_the_views(lessons: TestClient) -> None:
    ids = [lessons.post("/api/lessons", json={**LESSON, "title": f"L{i}"}, headers=T).json()["id"] for i in range(5)]
    page = lessons.get("/api/lessons?offset=2&limit=2", headers=T).json()
    assert [row["title"] for row in page] == ["L1", "L2"]
    assert lessons.get("/api/lessons?offset=6", headers=T).json() == []
    for query, field in (
        ("limit=0", "limit"),
        (f"limit={limits.MAX_LESSONS_PAGE + 1}", "limit"),
        ("offset=-1", "offset"),
    ):
        r = lessons.get(f"/api/lessons?{query}", headers=T)
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", field], query
    # the list comes from the summary columns: views that are not even JSON do not matter to it
    with raw(lessons).transaction() as run:
        run("UPDATE lessons SET views = ? WHERE id = ?", ("not json at all", ids[0]))
    assert [row["views"] for row in lessons.get("/api/lessons", headers=T).json()] == [12, 2, 2, 2, 2, 2]


def test_export_then_import_gives_the_same_lesson(lessons: TestClient) -> None:
    """The page's export is the lesson's title and views as JSON; its import posts them back."""
    lesson_id = lessons.post("/api/lessons", json=LESSON, headers=T).json()["id"]
    exported = lessons.get(f"/api/lessons/{lesson_id}", headers=T).json()
    file = json.loads(json.dumps({"title": exported["title"], "views": exported["views"]}))
    again = lessons.post("/api/lessons", json=file, headers=T).json()["id"]
    assert again != lesson_id
    assert lessons.get(f"/api/lessons/{again}", headers=T).json()["views"] == LESSON["views"]


def test_the_lesson_limit(lessons: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_LESSONS", 3)
    assert [lessons.post("/api/lessons", json=LESSON, headers=T).status_code for _ in range(3)] == [201, 201, 429]
    r = lessons.post("/api/lessons", json=LESSON, headers=T)
    assert r.status_code == 429 and "3 lessons" in r.json()["detail"][0]["msg"]


def test_bad_lessons_name_the_field(lessons: TestClient) -> None:
    def post(body: Any) -> Any:
        return lessons.post("/api/lessons", json=body, headers=T)

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


def test_the_data_folder_and_its_files_are_private(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir(mode=0o755)
    old = folder / store.FILENAME
    old.write_bytes(b"")
    old.chmod(0o644)  # as an older version left it
    s = store.Store(folder)
    s.add_lesson("t", [{"state": {}, "note": ""}])  # the -wal file exists now
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == [store.FILENAME, store.FILENAME + "-shm", store.FILENAME + "-wal"]
    assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in files} == dict.fromkeys((f.name for f in files), 0o600)
    s.close()


def test_migrations_upgrade_a_version_1_database(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / store.FILENAME)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    db.execute("INSERT INTO schema_version VALUES (1)")
    first = store.MIGRATIONS[0]
    assert isinstance(first, str)
    db.execute(first.format(id="INTEGER PRIMARY KEY AUTOINCREMENT"))
    db.execute("INSERT INTO lessons (title, views, created, updated) VALUES ('old', '[{}, {}, {}]', 'then', 'then')")
    db.commit()
    db.close()
    s = store.Store(tmp_path)
    assert s.version() == len(store.MIGRATIONS)
    listed = s.lessons()
    assert [(row["title"][:3], row["views"]) for row in listed] == [("old", 3), ("Sel", 12)]  # counted once
    assert s.add_lesson("new", []) == 3  # ids go on after the copied ones
    versions = [s.db.rows("SELECT version FROM lessons WHERE id = ?", (i,))[0][0] for i in (1, 2, 3)]
    assert versions == [1, 1, 1]  # migration 5: every lesson starts at version 1
    s.save_room("ABCDEF", "digest")  # migration 2 made the rooms table
    assert s.load_room("ABCDEF") == ("digest", None, 0)
    s.close()
    again = store.Store(tmp_path)  # opening again migrates nothing
    assert len(again.lessons()) == 3
    again.close()


def test_postgresql_migrates_once_and_goes_on_numbering(postgres: PostgresServer) -> None:
    url = postgres.new_database()
    first = store.Store(database.connect(url))
    assert first.version() == len(store.MIGRATIONS) and first.add_lesson("new", []) == 2
    second = store.Store(database.connect(url))  # a second process: nothing applied twice
    assert [row["title"][:3] for row in second.lessons()] == ["Sel", "new"]
    first.close()
    second.close()


def test_processes_that_start_together_migrate_once(tmp_path: Path, db_url: str | None) -> None:
    """Four processes open a fresh database at the same moment (as `--workers 4` does): one migrates,
    the others wait for it; every lesson is saved once, the ready-made one once."""
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        ids = pool.map(open_and_add, [(str(tmp_path / "data"), db_url, i) for i in range(4)])
    s = store.Store(database.connect(db_url)) if db_url else store.Store(tmp_path / "data")
    titles = [row["title"] for row in s.lessons()]
    assert sorted(ids) == [2, 3, 4, 5] and s.version() == len(store.MIGRATIONS)
    assert len(titles) == 5 and sum("the cat ate its fish" in t for t in titles) == 1
    s.close()


def test_a_saved_lesson_survives_kill_9(tmp_path: Path, db_url: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lesson the server answered 201 for is there after the server is killed with SIGKILL: a new app
    over the same data reads it (in-process: a second server process only added its start)."""
    body = json.dumps(LESSON).encode()
    env = {database.URL_ENV: db_url} if db_url else {}
    with app_process(tmp_path, None, **env) as (base, proc):
        request = urllib.request.Request(
            base + "/api/lessons", data=body, method="POST", headers={**T, "content-type": "application/json"}
        )
        with urllib.request.urlopen(request) as r:
            assert r.status == 201
            lesson_id = json.loads(r.read())["id"]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    monkeypatch.setenv("ATTENTION_TEACHER_TOKEN", TOKEN)
    monkeypatch.setenv("ATTENTION_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ATTENTION_REDIS_URL", raising=False)
    if db_url:
        monkeypatch.setenv(database.URL_ENV, db_url)
    else:
        monkeypatch.delenv(database.URL_ENV, raising=False)
    with TestClient(create_app(backend="numpy")) as client:
        saved = client.get(f"/api/lessons/{lesson_id}", headers=T).json()
    assert saved["title"] == LESSON["title"] and saved["views"] == LESSON["views"]


def test_a_long_deadline_waits_for_another_writer_past_the_busy_timeout(tmp_path: Path) -> None:
    """A lesson call gives up on SQLite's write lock after SQLITE_BUSY_MS (a 503), but a migration at start
    (MIGRATION_SECONDS) waits as long as another process holds it: four workers start together."""
    path = tmp_path / "lessons.sqlite3"
    db = database.SQLite(path)
    with db.transaction() as run:
        run("CREATE TABLE t (x)")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another process's write lock, held 2.5 s
    threading.Timer(database.SQLITE_BUSY_MS / 1000 + 0.5, lambda: holder.execute("COMMIT")).start()
    with pytest.raises(database.Unavailable, match="busy"), db.transaction() as run:
        run("INSERT INTO t VALUES (1)")
    with db.transaction(database.MIGRATION_SECONDS) as run:  # waits for the holder's COMMIT
        run("INSERT INTO t VALUES (2)")
    assert db.rows("SELECT x FROM t") == [(2,)]
    db.close()
    holder.close()
