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

Each lesson has a version, one more at each change: a change names the version it was made from
(the page's If-Match), and one made from an older version raises Stale instead of overwriting a
change it never saw (two tabs, two teachers).

Rooms of the memory broker are kept here too, as a copy for restarts: when the disk refuses to
write (full, read-only), the rooms go on in memory and one line says so (database.Unavailable and
its kinds are raised for lessons only).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import time
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.classroom import limits
from app.classroom.database import (
    MIGRATION_SECONDS,
    URL_ENV,
    Cursor,
    Database,
    ReadOnly,
    SQLite,
    Unavailable,
    connect,
)
from app.classroom.report import MIGRATION as REPORT_TABLES

log = logging.getLogger(__name__)
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
    """The folder, made if missing, readable by this user only (0700). A folder on a read-only disk is
    taken as it is (its database is then opened read-only)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        path.chmod(0o700)
    except OSError as e:
        if e.errno != errno.EROFS:
            raise
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


def _class_reports(db: Database, run: Cursor) -> None:
    """Migration 6: the class reports (app.classroom.report), one row per room's run and lesson."""
    for statement in REPORT_TABLES:
        run(db.ddl(statement))


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
    # 5: each lesson's version (its ETag): a change made from an older version is refused, not lost
    "ALTER TABLE lessons ADD COLUMN version BIGINT NOT NULL DEFAULT 1",
    # 6: the class reports: what each class answered, kept after its room closes
    _class_reports,
]


class Stale(Exception):
    """A change made from a version of the lesson that is no longer its current one."""

    def __init__(self, current: int) -> None:
        super().__init__(f"the lesson is at version {current} now")
        self.current = current


class LessonLimit(Exception):
    """MAX_LESSONS lessons are saved already."""


class Store:
    """`Store(folder)`: the folder's SQLite file; `Store(database)`: any Database (see database.connect)."""

    def __init__(self, where: Path | Database) -> None:
        if isinstance(where, Path):
            try:
                folder = private_dir(where)
            except OSError as e:
                kind = ReadOnly if e.errno == errno.EROFS else Unavailable
                raise kind(f"the data folder {where} can't be made ({e.strerror})") from None
            where = SQLite(folder / FILENAME)
        self.db = where
        self.migrate()

    @classmethod
    def in_memory(cls) -> Store:
        """A store that lives as long as this process (the rooms' when the data folder can't be written)."""
        return cls(SQLite(None))

    @classmethod
    def open(cls, data_dir: Path, url: str | None = None) -> Store:
        """The store of a --database URL, else of the data folder; Unavailable/BadURL as database.connect."""
        return cls(connect(url) if url else data_dir)

    def close(self) -> None:
        self.db.close()

    def version(self) -> int:
        return int(self.db.rows("SELECT version FROM schema_version")[0][0])

    def migrate(self) -> None:
        """Apply the migrations this database lacks (a database that has them all is only read: a
        read-only disk still serves its lessons)."""
        try:
            if self.version() == len(MIGRATIONS):
                return
        except Unavailable:
            raise
        except Exception:  # a new database: no schema_version table yet
            pass
        with self.db.transaction(MIGRATION_SECONDS) as run:
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

    def add_lesson(self, title: str, views: list[dict[str, Any]], most: int | None = None) -> int:
        """The new lesson's id; LessonLimit when `most` lessons are saved already."""
        now = _now()
        with self.db.transaction() as run:
            if most is not None and int(run("SELECT COUNT(*) FROM lessons")[0][0]) >= most:
                raise LessonLimit
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
        rows = self.db.rows("SELECT id, title, views, updated, version FROM lessons WHERE id = ?", (lesson_id,))
        if not rows:
            return None
        i, title, views, updated, version = rows[0]
        return {"id": int(i), "title": title, "views": json.loads(views), "updated": updated, "version": int(version)}

    @staticmethod
    def _expect(run: Cursor, lesson_id: int, versions: Collection[int] | None) -> bool:
        """Whether the lesson exists; Stale when it is at none of `versions` (None: any version will do)."""
        rows = run("SELECT version FROM lessons WHERE id = ?", (lesson_id,))
        if not rows:
            return False
        if versions is not None and int(rows[0][0]) not in versions:
            raise Stale(int(rows[0][0]))
        return True

    def replace_lesson(
        self, lesson_id: int, title: str, views: list[dict[str, Any]], versions: Collection[int] | None = None
    ) -> int | None:
        """The lesson's new version, or None when there is no such lesson; Stale when it is at none of
        `versions` (then nothing changed)."""
        with self.db.transaction() as run:
            if not self._expect(run, lesson_id, versions):
                return None
            changed = run(
                "UPDATE lessons SET title = ?, view_count = ?, views = ?, updated = ?, version = version + 1"
                " WHERE id = ? RETURNING version",
                (title, len(views), _dump(views), _now(), lesson_id),
            )
        return int(changed[0][0])

    def delete_lesson(self, lesson_id: int, versions: Collection[int] | None = None) -> bool:
        """False when there is no such lesson; Stale when it is at none of `versions`."""
        with self.db.transaction() as run:
            if not self._expect(run, lesson_id, versions):
                return False
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

    # rooms (memory broker): a copy for restarts, kept as well as the disk lets it

    _rooms_failing = False

    def _room_copy(self, write: Callable[[Cursor], object]) -> None:
        """Write to the rooms' copy; when the disk refuses, say so once (and once when it works again)."""
        try:
            with self.db.transaction() as run:
                write(run)
        except Unavailable as e:
            if not self._rooms_failing:
                log.warning("classroom: rooms go on in memory only: %s", e)
                self._rooms_failing = True
            return
        if self._rooms_failing:
            log.warning("classroom: rooms are copied to %s again", self.db.where)
            self._rooms_failing = False

    def save_room(self, code: str, key_digest: str) -> None:
        self._room_copy(
            lambda run: run(
                "INSERT INTO rooms (code, key_digest, touched) VALUES (?, ?, ?)", (code, key_digest, time.time())
            )
        )

    def save_state(self, code: str, seq: int, state: str) -> None:
        self._room_copy(
            lambda run: run(
                "UPDATE rooms SET state = ?, seq = ?, touched = ? WHERE code = ?", (state, seq, time.time(), code)
            )
        )

    def load_room(self, code: str) -> tuple[str, str | None, int] | None:
        """(key digest, state JSON or None, seq) of a room not older than its TTL."""
        cutoff = time.time() - limits.ROOM_TTL_SECONDS
        try:
            rows = self.db.rows(
                "SELECT key_digest, state, seq FROM rooms WHERE code = ? AND touched > ?", (code, cutoff)
            )
        except Unavailable as e:
            log.warning("classroom: rooms on disk can't be read: %s", e)
            return None
        return None if not rows else (rows[0][0], rows[0][1], int(rows[0][2]))

    def delete_room(self, code: str) -> None:
        self._room_copy(lambda run: run("DELETE FROM rooms WHERE code = ?", (code,)))

    def count_rooms(self) -> int:
        cutoff = time.time() - limits.ROOM_TTL_SECONDS
        self._room_copy(lambda run: run("DELETE FROM rooms WHERE touched <= ?", (cutoff,)))
        try:
            return int(self.db.rows("SELECT COUNT(*) FROM rooms WHERE touched > ?", (cutoff,))[0][0])
        except Unavailable as e:
            log.warning("classroom: rooms on disk can't be counted: %s", e)
            return 0
