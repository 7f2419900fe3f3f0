"""app.web.assets: the page is served from the bundle while it matches the sources, from the sources
(an import map) once one changes, and the check is not repeated on every page load."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.web.assets import STATIC_DIR, Assets


@pytest.fixture
def static(tmp_path: Path) -> Path:
    """A static/ folder with one module, one style sheet and a bundle built from them."""
    root = tmp_path / "static"
    (root / "js").mkdir(parents=True)
    (root / "css").mkdir()
    (root / "dist").mkdir()
    (root / "js" / "main.js").write_text("export const x = 1;\n")
    (root / "css" / "page.css").write_text("body { margin: 0 }\n")
    for name in ("app.js", "styles.css"):
        (root / "dist" / name).write_text(f"/* {name} */\n")
    sources = Assets(root).sources_hash()
    manifest = {"app.js": "dist/app.js", "styles.css": "dist/styles.css", "sources": sources}
    (root / "dist" / "manifest.json").write_text(json.dumps(manifest))
    return root


def test_a_fresh_bundle_is_served_and_an_edit_is_seen_after_recheck(static: Path) -> None:
    now = [100.0]
    assets = Assets(static, recheck=1.0, clock=lambda: now[0])
    first = assets.bundle()
    assert first is not None and first.fresh
    assert first.app.startswith("/static/dist/app.js?v=")
    (static / "js" / "main.js").write_text("export const x = 2;\n")  # a checkout being edited
    now[0] += 0.5
    assert assets.bundle() is first  # within a second: the answer is reused, no file is looked at
    now[0] += 0.5
    again = assets.bundle()
    assert again is not None and not again.fresh  # served from the sources from now on


def test_reused_answers_look_at_no_file(static: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    assets = Assets(static, clock=lambda: now[0])
    assets.bundle()
    looks: list[str] = []

    def glob(self: Path, pattern: str) -> Iterator[Path]:
        looks.append(pattern)
        return iter(())

    monkeypatch.setattr(Path, "glob", glob)
    for _ in range(50):
        now[0] += 0.01
        assets.bundle()
    assert looks == []


def test_no_bundle_without_a_manifest(tmp_path: Path) -> None:
    root = tmp_path / "static"
    shutil.copytree(STATIC_DIR / "js", root / "js")
    assert Assets(root).bundle() is None
