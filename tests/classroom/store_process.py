"""What a process of its own does with the lesson store (imports only the store: a spawned process starts fast)."""

from __future__ import annotations

from pathlib import Path

from app.classroom import database, store


def open_and_add(args: tuple[str, str | None, int]) -> int:
    """Open the store (migrating it if need be) and save one lesson; its id."""
    folder, url, i = args
    s = store.Store(database.connect(url)) if url else store.Store(Path(folder))
    lesson_id = s.add_lesson(f"from process {i}", [{"state": {}, "note": ""}])
    s.close()
    return lesson_id
