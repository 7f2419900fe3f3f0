"""The browser tests' chapter list is the page's (tests/browser/registry.py reads
static/js/chapters/index.js): every chapter module is in it, in the registry's order, and an entry
the reader cannot parse is an error, never a chapter silently left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.registry import CHAPTERS, chapter_ids

JS = Path(__file__).resolve().parents[2] / "static" / "js" / "chapters"


def test_every_chapter_module_is_in_the_tests_list_in_the_registrys_order() -> None:
    modules = {p.stem for p in JS.glob("*.js") if "export default {" in p.read_text()}
    assert set(CHAPTERS) == modules and len(CHAPTERS) == len(modules)
    assert CHAPTERS[0] == "rnn" and {"writing", "today"} <= set(CHAPTERS)
    text = (JS / "index.js").read_text()
    assert sorted(CHAPTERS, key=lambda c: text.index(f'id: "{c}"')) == CHAPTERS


def test_an_entry_of_another_form_is_an_error() -> None:
    good = 'export const CHAPTERS = [\n  { id: "a", title: "A", load: () => import("./a.js") },\n];'
    assert chapter_ids(good) == ["a"]
    odd = good.replace("\n];", '\n  { id: "b", load: () => import("./b.js"), title: "B" },\n];')
    with pytest.raises(ValueError, match="2 entries, 1 read"):
        chapter_ids(odd)
    with pytest.raises(ValueError, match="no `export const CHAPTERS"):
        chapter_ids("export const LIST = [];")
