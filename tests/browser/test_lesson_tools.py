"""The teacher's lesson tools in the page (issue 17): edit, reorder and delete saved lessons and their
views; a printable handout (each view's picture, numbers and note); the whole lesson as one offline
HTML file. A real server, real headless Chromium; what the page did is read back from the API."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Watched
from tests.browser.helpers import download, offline_page
from tests.classroom.conftest import TOKEN, app_process, auth

pytestmark = pytest.mark.browser

CAT = {"chapter": "steps", "example": "the-cat-ate-its-fish", "mask": "full", "focus": "3"}
THREE: dict[str, Any] = {
    "title": "Three views",
    "views": [
        {"state": {**CAT, "step": "score"}, "note": "q·k for its"},
        {"state": {**CAT, "step": "softmax"}, "note": "softmax: each row sums to 1"},
        {"state": {"chapter": "rnn"}, "note": "before attention: a chain"},
    ],
}
MASKS = {"chapter": "masks", "example": "the-cat-ate-its-fish", "step": "causal", "mask": "causal", "focus": "1"}


@pytest.fixture(scope="module")
def lesson_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with app_process(tmp_path_factory.mktemp("lesson-tools")) as (base, _):
        yield base


def api(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={**auth(TOKEN), "content-type": "application/json"}
    )
    with urllib.request.urlopen(request) as r:
        raw = r.read()
        return json.loads(raw) if raw else None


def open_lessons(w: Watched, lesson_id: int) -> None:
    w.page.goto(f"{w.base}/?token={TOKEN}&example=the-cat-ate-its-fish&step=mix&focus=0")
    w.wait_ready(step="mix")
    w.page.locator("[data-testid=lessons] summary").click()
    w.page.wait_for_selector(f"[data-testid=lesson-select] option[value='{lesson_id}']", state="attached")
    w.page.get_by_test_id("lesson-select").select_option(str(lesson_id))


def test_edit_reorder_and_delete_lessons_in_the_page(watched: Watched, lesson_server: str) -> None:
    w = watched
    w.base = lesson_server
    lesson_id = api("POST", lesson_server + "/api/lessons", THREE)["id"]
    open_lessons(w, lesson_id)
    w.page.get_by_test_id("lesson-edit").click()
    w.page.wait_for_selector("[data-testid=lesson-edit-view]")
    rows = w.page.get_by_test_id("lesson-edit-view")
    assert rows.count() == 3
    assert [t.split(" · ")[:2] for t in w.page.get_by_test_id("lesson-edit-what").all_inner_texts()] == [
        ["The five steps of attention", "score"],
        ["The five steps of attention", "softmax"],
        ["Why not an RNN"],
    ]
    assert w.page.get_by_test_id("lesson-edit-up").first.is_disabled()  # the first view can't go up
    w.page.get_by_test_id("lesson-edit-note").nth(1).fill("the weights, edited")
    w.page.get_by_test_id("lesson-edit-down").first.click()  # score moves below softmax
    w.page.get_by_test_id("lesson-edit-remove").nth(2).click()  # the rnn view goes
    w.page.get_by_test_id("lesson-edit-capture").nth(1).click()  # score → the page's own view (mix, focus 0)
    assert (
        w.page.get_by_test_id("lesson-edit-what")
        .nth(1)
        .inner_text()
        .startswith("The five steps of attention · mix · focus 0")
    )
    w.page.get_by_test_id("lesson-edit-title").fill("Two views, edited")
    w.page.get_by_test_id("lesson-edit-save").click()
    w.page.wait_for_selector(f"[data-testid=lesson-status]:has-text('Lesson {lesson_id} saved (2 views)')")
    assert w.page.get_by_test_id("lesson-editor").is_hidden()
    saved = api("GET", f"{lesson_server}/api/lessons/{lesson_id}")
    assert saved["title"] == "Two views, edited"
    assert [(v["state"]["step"], v["note"]) for v in saved["views"]] == [
        ("softmax", "the weights, edited"),
        ("mix", "q·k for its"),
    ]
    assert saved["views"][1]["state"]["focus"] == "0"
    assert "Two views, edited (2 views)" in w.page.get_by_test_id("lesson-select").inner_text()
    # reorder: up the list, one place per click
    before = [row["id"] for row in api("GET", lesson_server + "/api/lessons")]
    w.page.get_by_test_id("lesson-move-up").click()
    w.page.wait_for_selector("[data-testid=lesson-status]:has-text('Moved.')")
    after = [row["id"] for row in api("GET", lesson_server + "/api/lessons")]
    i = before.index(lesson_id)
    assert after.index(lesson_id) == i - 1 and after[i] == before[i - 1]
    assert w.page.get_by_test_id("lesson-select").input_value() == str(lesson_id)
    # delete, after the page asks
    w.page.once("dialog", lambda d: d.accept())
    w.page.get_by_test_id("lesson-delete").click()
    w.page.wait_for_selector("[data-testid=lesson-status]:has-text('Deleted.')")
    assert lesson_id not in [row["id"] for row in api("GET", lesson_server + "/api/lessons")]
    assert w.page.locator(f"[data-testid=lesson-select] option[value='{lesson_id}']").count() == 0


def test_a_printable_handout(watched: Watched, lesson_server: str, tmp_path: Path) -> None:
    w = watched
    w.base = lesson_server
    lesson_id = api("POST", lesson_server + "/api/lessons", THREE)["id"]
    open_lessons(w, lesson_id)
    # the teacher's handout has each view's note; the students' has none (a note may hold an answer)
    w.page.get_by_test_id("lesson-handout-notes").click()
    w.page.wait_for_selector("[data-testid=lesson-handout][data-notes=true]", timeout=30_000)
    w.wait_ready(step="mix")  # the page is back on the teacher's view
    assert w.page.get_by_test_id("handout-note").all_inner_texts() == [v["note"] for v in THREE["views"]]
    # its words from the catalogs (each language's in static/i18n)
    assert w.page.locator(".lesson-handout h1").inner_text() == f"{THREE['title']} (the teacher's handout, with notes)"
    assert w.page.locator(".lesson-handout h2").first.inner_text().startswith("View 1 of 3 · ")
    w.page.get_by_test_id("handout-close").click()
    w.page.get_by_test_id("lesson-handout-make").click()
    w.page.wait_for_selector("[data-testid=lesson-handout][data-notes=false]", timeout=30_000)
    w.wait_ready(step="mix")
    sections = w.page.get_by_test_id("handout-view")
    assert sections.count() == 3
    assert w.page.get_by_test_id("handout-note").count() == 0
    handout_text = w.page.get_by_test_id("lesson-handout").inner_text()
    assert not any(v["note"] in handout_text for v in THREE["views"] if v["note"])
    pictures = w.page.get_by_test_id("handout-picture")
    assert pictures.count() == 3
    widths = pictures.evaluate_all("(imgs) => imgs.map((i) => [i.src.slice(0, 22), i.naturalWidth, i.naturalHeight])")
    assert all(src == "data:image/png;base64," and width > 300 and height > 150 for src, width, height in widths)
    tables = w.page.get_by_test_id("handout-numbers")
    assert tables.nth(0).get_attribute("data-array") == "scores"
    assert tables.nth(1).get_attribute("data-array") == "weights"
    header = tables.nth(1).locator("tr").first.locator("th").all_inner_texts()
    assert header == ["", "the", "cat", "ate", "its", "fish"]
    its = tables.nth(1).locator("tr").nth(4).locator("td").all_inner_texts()  # the row of "its"
    assert its == ["0.013", "0.895", "0.013", "0.026", "0.053"]  # the page's own softmax numbers
    w.page.screenshot(path=str(tmp_path / "handout-screen.png"))
    # printed: the handout alone, one view per page
    w.page.emulate_media(media="print")
    assert w.page.evaluate("getComputedStyle(document.getElementById('app')).display") == "none"
    assert w.page.get_by_test_id("handout-print").is_hidden()
    pdf = w.page.pdf(format="A4", print_background=True)
    assert len(re.findall(rb"/Type\s*/Page[^s]", pdf)) == 3
    w.page.emulate_media(media="screen")
    w.page.get_by_test_id("handout-close").click()
    assert w.page.get_by_test_id("lesson-handout").count() == 0


def test_the_whole_lesson_as_one_offline_file(
    watched: Watched, lesson_server: str, browser: Any, tmp_path: Path
) -> None:
    w = watched
    w.base = lesson_server
    four = {**THREE, "views": [*THREE["views"], {"state": MASKS, "note": "the fourth note: no peeking"}]}
    lesson_id = api("POST", lesson_server + "/api/lessons", four)["id"]
    open_lessons(w, lesson_id)
    path = download(w, w.page.get_by_test_id("lesson-offline"), tmp_path)
    assert path.name == "lesson-three-views.html"
    w.page.wait_for_selector("[data-testid=lesson-status]:has-text('(4 views) that opens offline')")
    html = path.read_text(encoding="utf-8")
    assert "<script src=" not in html and "http://" not in html.split("attention-data")[0]
    assert not any(v["note"] in html for v in four["views"] if v["note"])  # the students' file: no note at all
    with offline_page(browser, path) as page:
        assert page.locator("#lesson-where").inner_text() == "1 / 4"
        assert page.locator("#lesson-note").inner_text() == ""
        assert page.evaluate("document.body.dataset.step") == "score"
        assert page.locator('[data-testid="cell-3-1"]').inner_text() == "6.000"  # its·cat = 2·3 + 0·0
        page.wait_for_function("() => Number(document.querySelector('#scene').dataset.frames || 0) > 0")
        page.keyboard.press("PageDown")
        assert page.locator("#lesson-where").inner_text() == "2 / 4"
        row = [page.locator(f'[data-testid="cell-3-{j}"]').inner_text() for j in range(5)]
        assert row == ["0.013", "0.895", "0.013", "0.026", "0.053"]
        page.keyboard.press("m")  # both masks travel, as in the single-view file
        assert page.locator('[data-testid="cell-1-0"]').inner_text() == "0.500"
        page.get_by_role("button", name="Next view →").click()
        assert page.locator("#lesson-where").inner_text() == "3 / 4"
        assert page.locator("#viewer").is_hidden() and page.locator("#still").is_visible()
        size = page.locator("#still-picture").evaluate("(i) => [i.naturalWidth, i.naturalHeight]")
        assert size[0] > 300 and size[1] > 150
        assert len(json.loads(page.locator("#still-numbers").inner_text())) > 0
        page.screenshot(path=str(tmp_path / "offline-still.png"))
        page.keyboard.press("PageDown")  # the masks chapter: the viewer opens on the mask step, causal
        assert page.locator("#lesson-where").inner_text() == "4 / 4" and page.locator("#viewer").is_visible()
        assert page.evaluate("[document.body.dataset.step, document.body.dataset.mask]") == ["mask", "causal"]
        assert page.locator('[data-testid="cell-0-1"]').inner_text() == "−∞"  # "the" can't see "cat"
        page.keyboard.press("PageUp")
        page.keyboard.press("PageUp")
        assert page.locator("#lesson-where").inner_text() == "2 / 4" and page.locator("#viewer").is_visible()


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080), (390, 844)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_editor_and_the_handout_fit_the_screen(
    watched: Watched, lesson_server: str, tmp_path: Path, size: tuple[int, int]
) -> None:
    """Nothing of the editor or the handout lies outside the window, at a projector's sizes and a phone's."""
    w = watched
    w.base = lesson_server
    w.page.set_viewport_size({"width": size[0], "height": size[1]})
    lesson_id = api("POST", lesson_server + "/api/lessons", THREE)["id"]
    open_lessons(w, lesson_id)
    w.page.get_by_test_id("lesson-edit").click()
    w.page.wait_for_selector("[data-testid=lesson-edit-view]")
    outside = """(root) => [...root.querySelectorAll('*')].filter((e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && (r.left < -1 || r.right > window.innerWidth + 1);
    }).map((e) => e.dataset.testid || e.tagName)"""
    assert w.page.get_by_test_id("lesson-editor").evaluate(outside) == []
    w.page.screenshot(path=str(tmp_path / f"editor-{size[0]}.png"))
    w.page.get_by_test_id("lesson-edit-cancel").click()
    w.page.get_by_test_id("lesson-handout-make").click()
    w.page.wait_for_selector("[data-testid=lesson-handout]", timeout=30_000)
    handout = w.page.get_by_test_id("lesson-handout")
    assert handout.evaluate(outside) == []
    assert handout.evaluate("(h) => h.scrollWidth <= h.clientWidth")
    w.page.screenshot(path=str(tmp_path / f"handout-{size[0]}.png"))
