"""Saved lessons (and, without Redis, the rooms) in the classroom's database: SQLite or PostgreSQL.

The default is one SQLite file, `classroom.sqlite3`, in the data folder (0700, the file 0600), in WAL
mode with synchronous=FULL; `--database postgresql://…` ($ATTENTION_DATABASE_URL) puts the lessons
in PostgreSQL instead, so that several app processes on several machines share them. Either way a
write that was answered is committed, so it survives `kill -9` of the server.

One schema and one list of MIGRATIONS for both databases: table `schema_version` holds how many were
applied; at start each process applies the rest in order, one process at a time. A migration is a
statement (written once: `database.ddl()` fills in the two type names that differ) or a function.

The list of lessons reads stored summary columns (title, number of views, position, updated): it
never reads, let alone parses, a lesson's views, so its cost does not grow with the lessons' sizes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.classroom import limits
from app.classroom.database import URL_ENV, Cursor, Database, SQLite, connect

DATA_ENV = "ATTENTION_DATA_DIR"
FILENAME = "classroom.sqlite3"
LESSONS_DIR = Path(__file__).with_name("lessons")


def default_data_dir() -> Path:
    """$ATTENTION_DATA_DIR, else the platform's per-user data folder (e.g. ~/.local/share/attention3d)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    import platformdirs

    return Path(platformdirs.user_data_dir("attention3d", appauthor=False))


def private_dir(path: Path) -> Path:
    """The folder, made if missing, readable by this user only (0700)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def database_url() -> str | None:
    """$ATTENTION_DATABASE_URL (set by --database), or None for the data folder's SQLite file."""
    return os.environ.get(URL_ENV) or None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _dump(views: list[dict[str, Any]]) -> str:
    return json.dumps(views, ensure_ascii=False, separators=(",", ":"))


def _ready_made(db: Database, run: Cursor) -> None:
    """Migration 3: the lessons that ship with the app (one per file in app/classroom/lessons/)."""
    for path in sorted(LESSONS_DIR.glob("*.json")):
        lesson = json.loads(path.read_text(encoding="utf-8"))
        now = _now()
        run(
            "INSERT INTO lessons (title, views, created, updated) VALUES (?, ?, ?, ?)",
            (lesson["title"], json.dumps(lesson["views"]), now, now),
        )


def _summaries(db: Database, run: Cursor) -> None:
    """Migration 4: summary columns for the list (position, view_count), the views last.

    The table is made anew (SQLite can't reorder columns) and each lesson's views are parsed once,
    here, one lesson at a time, to count them.
    """
    run(
        db.ddl("""CREATE TABLE lessons_v4 (
        id {id},
        position BIGINT NOT NULL,
        title TEXT NOT NULL,
        view_count INTEGER NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        views TEXT NOT NULL
    )""")
    )
    for (lesson_id,) in run("SELECT id FROM lessons ORDER BY id"):
        title, views, created, updated = run(
            "SELECT title, views, created, updated FROM lessons WHERE id = ?", (lesson_id,)
        )[0]
        count = len(json.loads(views))
        run(
            "INSERT INTO lessons_v4 (id, position, title, view_count, created, updated, views)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (lesson_id, lesson_id, title, count, created, updated, views),
        )
    run("DROP TABLE lessons")
    run("ALTER TABLE lessons_v4 RENAME TO lessons")
    if db.dialect == "postgresql":  # ids were copied: the identity goes on after the largest
        next_id = "(SELECT COALESCE(MAX(id), 0) + 1 FROM lessons)"
        run(f"SELECT setval(pg_get_serial_sequence('lessons', 'id'), {next_id}, false)")
    run("CREATE INDEX lessons_by_position ON lessons (position, id)")


Migration = str | Callable[[Database, Cursor], None]
MIGRATIONS: list[Migration] = [
    # 1: lessons
    """CREATE TABLE lessons (
        id {id},
        title TEXT NOT NULL,
        views TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL
    )""",
    # 2: rooms (the memory broker's, so that a restart keeps them)
    """CREATE TABLE rooms (
        code TEXT PRIMARY KEY,
        key_digest TEXT NOT NULL,
        state TEXT,
        seq INTEGER NOT NULL DEFAULT 0,
        touched {float} NOT NULL
    )""",
    # 3: the ready-made lessons
    _ready_made,
    # 4: the list's summary columns, and an order the teacher can change
    _summaries,
]


class Store:
    """`Store(folder)`: the folder's SQLite file; `Store(database)`: any Database (see database.connect)."""

    def __init__(self, where: Path | Database) -> None:
        if isinstance(where, Path):
            where = SQLite(private_dir(where) / FILENAME)
        self.db = where
        self.migrate()

    @classmethod
    def open(cls, data_dir: Path, url: str | None = None) -> Store:
        """The store of a --database URL, else of the data folder; Unavailable/BadURL as database.connect."""
        return cls(connect(url) if url else data_dir)

    def close(self) -> None:
        self.db.close()

    def version(self) -> int:
        return int(self.db.rows("SELECT version FROM schema_version")[0][0])

    def migrate(self) -> None:
        with self.db.transaction() as run:
            self.db.lock_for_migration(run)  # first: even CREATE … IF NOT EXISTS races on PostgreSQL
            run("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = run("SELECT version FROM schema_version")
            if not row:
                run("INSERT INTO schema_version (version) VALUES (0)")
                version = 0
            else:
                version = int(row[0][0])
            if version > len(MIGRATIONS):
                raise RuntimeError(f"{self.db.where} has schema version {version}, newer than this app's")
            for step in MIGRATIONS[version:]:
                if callable(step):
                    step(self.db, run)
                else:
                    run(self.db.ddl(step))
            run("UPDATE schema_version SET version = ?", (len(MIGRATIONS),))

    # lessons

    def count_lessons(self) -> int:
        return int(self.db.rows("SELECT COUNT(*) FROM lessons")[0][0])

    def add_lesson(self, title: str, views: list[dict[str, Any]]) -> int:
        now = _now()
        with self.db.transaction() as run:
            rows = run(
                "INSERT INTO lessons (position, title, view_count, created, updated, views)"
                " VALUES ((SELECT COALESCE(MAX(position), 0) + 1 FROM lessons), ?, ?, ?, ?, ?) RETURNING id",
                (title, len(views), now, now, _dump(views)),
            )
        return int(rows[0][0])

    def lessons(self, offset: int = 0, limit: int = limits.LESSONS_PAGE) -> list[dict[str, Any]]:
        """One page of the list, in the teacher's order: summary columns only."""
        rows = self.db.rows(
            "SELECT id, title, view_count, updated FROM lessons ORDER BY position, id LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [{"id": int(i), "title": t, "views": int(n), "updated": u} for i, t, n, u in rows]

    def lesson(self, lesson_id: int) -> dict[str, Any] | None:
        rows = self.db.rows("SELECT id, title, views, updated FROM lessons WHERE id = ?", (lesson_id,))
        if not rows:
            return None
        row = rows[0]
        return {"id": int(row[0]), "title": row[1], "views": json.loads(row[2]), "updated": row[3]}

    def replace_lesson(self, lesson_id: int, title: str, views: list[dict[str, Any]]) -> bool:
        with self.db.transaction() as run:
            changed = run(
                "UPDATE lessons SET title = ?, view_count = ?, views = ?, updated = ? WHERE id = ? RETURNING id",
                (title, len(views), _dump(views), _now(), lesson_id),
            )
        return len(changed) == 1

    def delete_lesson(self, lesson_id: int) -> bool:
        with self.db.transaction() as run:
            return len(run("DELETE FROM lessons WHERE id = ? RETURNING id", (lesson_id,))) == 1

    def order_lessons(self, ids: Sequence[int]) -> list[int]:
        """Put these lessons in this order, in the places they held among the others; the ids not found."""
        with self.db.transaction() as run:
            marks = ",".join("?" * len(ids))
            found = dict(run(f"SELECT id, position FROM lessons WHERE id IN ({marks})", tuple(ids)))
            missing = [i for i in ids if i not in found]
            if missing:
                return missing
            for lesson_id, position in zip(ids, sorted(found.values()), strict=True):
                run("UPDATE lessons SET position = ? WHERE id = ?", (position, lesson_id))
        return []

    # rooms (memory broker)

    def save_room(self, code: str, key_digest: str) -> None:
        with self.db.transaction() as run:
            run("INSERT INTO rooms (code, key_digest, touched) VALUES (?, ?, ?)", (code, key_digest, time.time()))

    def save_state(self, code: str, seq: int, state: str) -> None:
        with self.db.transaction() as run:
            run("UPDATE rooms SET state = ?, seq = ?, touched = ? WHERE code = ?", (state, seq, time.time(), code))

    def load_room(self, code: str) -> tuple[str, str | None, int] | None:
        """(key digest, state JSON or None, seq) of a room not older than its TTL."""
        cutoff = time.time() - limits.ROOM_TTL_SECONDS
        rows = self.db.rows("SELECT key_digest, state, seq FROM rooms WHERE code = ? AND touched > ?", (code, cutoff))
        return None if not rows else (rows[0][0], rows[0][1], int(rows[0][2]))

    def delete_room(self, code: str) -> None:
        with self.db.transaction() as run:
            run("DELETE FROM rooms WHERE code = ?", (code,))

    def count_rooms(self) -> int:
        cutoff = time.time() - limits.ROOM_TTL_SECONDS
        with self.db.transaction() as run:
            run("DELETE FROM rooms WHERE touched <= ?", (cutoff,))
            return int(run("SELECT COUNT(*) FROM rooms")[0][0])
