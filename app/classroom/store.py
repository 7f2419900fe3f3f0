"""Saved lessons (and, without Redis, the rooms) in SQLite under the data directory.

One file, `classroom.sqlite3`, in WAL mode with synchronous=FULL: a write that was answered is on
disk, so it survives `kill -9` of the server. The schema has a version (table `schema_version`)
and every change to it is a migration in MIGRATIONS, applied in order from the first table on.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.classroom import limits

DATA_ENV = "ATTENTION_DATA_DIR"
FILENAME = "classroom.sqlite3"
LESSONS_DIR = Path(__file__).with_name("lessons")


def default_data_dir() -> Path:
    """$ATTENTION_DATA_DIR, else the platform's per-user data folder (e.g. ~/.local/share/attention3d)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    import platformdirs

    return Path(platformdirs.user_data_dir("attention3d", appauthor=False))


def _ready_made(db: sqlite3.Connection) -> None:
    """Migration 3: the lessons that ship with the app (one per file in app/classroom/lessons/)."""
    for path in sorted(LESSONS_DIR.glob("*.json")):
        lesson = json.loads(path.read_text(encoding="utf-8"))
        now = _now()
        db.execute(
            "INSERT INTO lessons (title, views, created, updated) VALUES (?, ?, ?, ?)",
            (lesson["title"], json.dumps(lesson["views"]), now, now),
        )


Migration = str | Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = [
    # 1: lessons
    """CREATE TABLE lessons (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
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
        touched REAL NOT NULL
    )""",
    # 3: the ready-made lessons
    _ready_made,
]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store:
    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / FILENAME
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self.migrate()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def version(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT version FROM schema_version").fetchone()
            return int(row[0])

    def migrate(self) -> None:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")  # one process migrates at a time
            try:
                db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                row = db.execute("SELECT version FROM schema_version").fetchone()
                if row is None:
                    db.execute("INSERT INTO schema_version (version) VALUES (0)")
                    version = 0
                else:
                    version = int(row[0])
                if version > len(MIGRATIONS):
                    raise RuntimeError(f"{self.path} has schema version {version}, newer than this app's")
                for step in MIGRATIONS[version:]:
                    if callable(step):
                        step(db)
                    else:
                        db.execute(step)
                db.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS),))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _write(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[int, int | None]:
        """(rows changed, last row id) of one statement, committed (autocommit) before it returns."""
        with self._lock:
            cur = self._db.execute(sql, args)
            return cur.rowcount, cur.lastrowid

    # lessons

    def count_lessons(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM lessons")[0][0])

    def add_lesson(self, title: str, views: list[dict[str, Any]]) -> int:
        now = _now()
        _, row_id = self._write(
            "INSERT INTO lessons (title, views, created, updated) VALUES (?, ?, ?, ?)",
            (title, json.dumps(views), now, now),
        )
        assert row_id is not None
        return row_id

    def lessons(self) -> list[dict[str, Any]]:
        rows = self._rows("SELECT id, title, views, updated FROM lessons ORDER BY id")
        return [{"id": i, "title": t, "views": len(json.loads(v)), "updated": u} for i, t, v, u in rows]

    def lesson(self, lesson_id: int) -> dict[str, Any] | None:
        rows = self._rows("SELECT id, title, views, updated FROM lessons WHERE id = ?", (lesson_id,))
        if not rows:
            return None
        row = rows[0]
        return {"id": row[0], "title": row[1], "views": json.loads(row[2]), "updated": row[3]}

    def replace_lesson(self, lesson_id: int, title: str, views: list[dict[str, Any]]) -> bool:
        changed, _ = self._write(
            "UPDATE lessons SET title = ?, views = ?, updated = ? WHERE id = ?",
            (title, json.dumps(views), _now(), lesson_id),
        )
        return changed == 1

    def delete_lesson(self, lesson_id: int) -> bool:
        return self._write("DELETE FROM lessons WHERE id = ?", (lesson_id,))[0] == 1

    # rooms (memory broker)

    def save_room(self, code: str, key_digest: str) -> None:
        self._write("INSERT INTO rooms (code, key_digest, touched) VALUES (?, ?, ?)", (code, key_digest, time.time()))

    def save_state(self, code: str, seq: int, state: str) -> None:
        self._write("UPDATE rooms SET state = ?, seq = ?, touched = ? WHERE code = ?", (state, seq, time.time(), code))

    def load_room(self, code: str) -> tuple[str, str | None, int] | None:
        """(key digest, state JSON or None, seq) of a room not older than its TTL."""
        cutoff = time.time() - limits.ROOM_TTL_SECONDS
        rows = self._rows("SELECT key_digest, state, seq FROM rooms WHERE code = ? AND touched > ?", (code, cutoff))
        return None if not rows else (rows[0][0], rows[0][1], int(rows[0][2]))

    def delete_room(self, code: str) -> None:
        self._write("DELETE FROM rooms WHERE code = ?", (code,))

    def count_rooms(self) -> int:
        cutoff = time.time() - limits.ROOM_TTL_SECONDS
        self._write("DELETE FROM rooms WHERE touched <= ?", (cutoff,))
        return int(self._rows("SELECT COUNT(*) FROM rooms")[0][0])
