"""The lesson's chapters as the page lists them (not a test module): read from the page's own
registry, static/js/chapters/index.js, so a chapter added there is in every browser test that
walks the chapters (test_lesson, test_layout, test_chapters_fit, test_projector)."""

from __future__ import annotations

import re
from pathlib import Path

REGISTRY = Path(__file__).resolve().parents[2] / "static" / "js" / "chapters" / "index.js"
LIST = re.compile(r"export const CHAPTERS = \[(.*?)\n\];", re.S)
ENTRY = re.compile(r'\{\s*id:\s*"([a-z0-9-]+)",\s*title:\s*"[^"]*",\s*load:\s*\(\)\s*=>\s*import\("\./\1\.js"\)\s*\}')


def chapter_ids(registry: str | None = None) -> list[str]:
    """The chapters' ids in the lesson's order; `registry`: the file's text (default: read it)."""
    text = REGISTRY.read_text() if registry is None else registry
    listed = LIST.search(text)
    if not listed:
        raise ValueError(f"{REGISTRY.name}: no `export const CHAPTERS = [` list")
    body = listed.group(1)
    ids = ENTRY.findall(body)
    if not ids or len(ids) != body.count("id:"):
        raise ValueError(f"{REGISTRY.name}: {body.count('id:')} entries, {len(ids)} read: an entry of another form")
    return ids


CHAPTERS = chapter_ids()
# the query a chapter opens with where a test needs content on screen (Write: six tokens already written)
OPENING = {"writing": "&n=6"}
