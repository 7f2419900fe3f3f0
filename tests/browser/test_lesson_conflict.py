"""Two tabs edit one saved lesson (issue 39): the second save is refused by the server (412), the page says
"changed in another tab: reload or overwrite", and neither edit is lost without the teacher choosing.
A real server, two real headless Chromium tabs; what was saved is read back from the API."""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched, watched_page
from tests.classroom.conftest import TOKEN, app_process, auth

pytestmark = pytest.mark.browser

CAT = {"chapter": "steps", "example": "the-cat-ate-its-fish", "mask": "full", "focus": "3"}
TWO: dict[str, Any] = {
    "title": "Two views",
    "views": [
        {"state": {**CAT, "step": "score"}, "note": "q·k for its"},
        {"state": {**CAT, "step": "softmax"}, "note": "each row sums to 1"},
    ],
}
SHOTS = Path(os.environ.get("SCREENSHOTS", "/tmp/attention3d-screenshots"))


@pytest.fixture(scope="module")
def lesson_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with app_process(tmp_path_factory.mktemp("lesson-conflict")) as (base, _):
        yield base


def api(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {**auth(TOKEN), "content-type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers)) as r:
        raw = r.read()
        return json.loads(raw) if raw else None


def put(url: str, body: Any, if_match: str) -> str:
    """A PUT from outside the page (another tab, another teacher); the new ETag."""
    headers = {**auth(TOKEN), "content-type": "application/json", "if-match": if_match}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="PUT", headers=headers)
    with urllib.request.urlopen(request) as r:
        return str(r.headers["etag"])


def open_editor(w: Watched, lesson_id: int) -> None:
    w.page.goto(f"{w.base}/?token={TOKEN}&example=the-cat-ate-its-fish&step=mix&focus=0")
    w.wait_ready(step="mix")
    w.page.locator("[data-testid=lessons] summary").click()
    w.page.wait_for_selector(f"[data-testid=lesson-select] option[value='{lesson_id}']", state="attached")
    w.page.get_by_test_id("lesson-select").select_option(str(lesson_id))
    w.page.get_by_test_id("lesson-edit").click()
    w.page.wait_for_selector("[data-testid=lesson-edit-view]")


def save(w: Watched) -> None:
    w.page.get_by_test_id("lesson-edit-save").click()


def test_two_tabs_edit_one_lesson(browser: Any, lesson_server: str) -> None:
    lesson_id = api("POST", lesson_server + "/api/lessons", TWO)["id"]
    url = f"{lesson_server}/api/lessons/{lesson_id}"
    with watched_page(browser, lesson_server) as one, watched_page(browser, lesson_server) as two:
        two.expect_console_error("412")  # the refused save, which the page shows
        open_editor(one, lesson_id)
        open_editor(two, lesson_id)
        # tab one renames and saves: version 2
        one.page.get_by_test_id("lesson-edit-title").fill("Renamed in tab one")
        save(one)
        one.page.wait_for_selector(f"[data-testid=lesson-status]:has-text('Lesson {lesson_id} saved')")
        # tab two, opened at version 1, edits a note and saves: refused, and it says so
        two.page.get_by_test_id("lesson-edit-note").nth(1).fill("softmax, edited in tab two")
        save(two)
        conflict = two.page.get_by_test_id("lesson-conflict")
        conflict.wait_for(state="visible")
        assert conflict.inner_text().startswith("Changed in another tab since you opened it: reload it")
        assert "or overwrite it with yours" in conflict.inner_text()
        assert two.text("lesson-status").startswith("Not saved: this lesson was changed in another tab.")
        saved = api("GET", url)
        assert (saved["title"], saved["version"]) == ("Renamed in tab one", 2)  # tab one's edit is kept
        # tab two's edit is still on its screen, not lost
        assert two.page.get_by_test_id("lesson-edit-note").nth(1).input_value() == "softmax, edited in tab two"
        SHOTS.mkdir(parents=True, exist_ok=True)
        for width, height in ((1280, 720), (1920, 1080), (390, 844)):
            two.page.set_viewport_size({"width": width, "height": height})
            conflict.scroll_into_view_if_needed()
            box = conflict.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (width, box)
            two.page.screenshot(path=str(SHOTS / f"lesson-conflict-{width}x{height}.png"))
        two.page.set_viewport_size({"width": 1280, "height": 800})
        # overwrite: tab two's version is saved, on purpose, over tab one's
        two.page.get_by_test_id("lesson-conflict-overwrite").click()
        two.page.wait_for_selector(f"[data-testid=lesson-status]:has-text('Lesson {lesson_id} saved')")
        saved = api("GET", url)
        assert (saved["title"], saved["version"]) == ("Two views", 3)
        assert saved["views"][1]["note"] == "softmax, edited in tab two"
        # tab one, still at version 2, edits again: refused; reload shows what tab two saved
        open_editor(one, lesson_id)  # opens version 3
        assert put(url, {"title": "Saved by a third tab", "views": saved["views"]}, '"3"') == '"4"'
        one.expect_console_error("412")
        one.page.get_by_test_id("lesson-edit-title").fill("Tab one's second try")
        save(one)
        one.page.get_by_test_id("lesson-conflict").wait_for(state="visible")
        one.page.get_by_test_id("lesson-conflict-reload").click()
        expect(one.page.get_by_test_id("lesson-edit-title")).to_have_value("Saved by a third tab")
        assert one.page.get_by_test_id("lesson-conflict").is_hidden()
        assert api("GET", url)["version"] == 4  # reloading wrote nothing
        save(one)  # saving the reloaded lesson names version 4: accepted
        one.page.wait_for_selector(f"[data-testid=lesson-status]:has-text('Lesson {lesson_id} saved')")
        assert api("GET", url)["version"] == 5
