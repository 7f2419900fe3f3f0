"""The screenshots of docs/lessons.md (1280×720): the editor, a page of the handout, the offline file.

.venv/bin/python -m tests.browser.saved_lesson_screenshots   (a server of its own; docs/screenshots/lessons-*.png)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.classroom.conftest import ROOT, TOKEN, app_process

OUT = ROOT / "docs" / "screenshots"
SCROLL_TO_VIEW_5 = """() => {
    const h = document.querySelector('.lesson-handout');
    h.scrollTop = h.querySelectorAll('.handout-view')[4].offsetTop - 70;
}"""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, app_process(Path(tmp) / "data") as (base, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{base}/?token={TOKEN}&example=the-cat-ate-its-fish&step=softmax&focus=3")
        page.wait_for_selector('#app[data-ready="true"]')
        page.locator("[data-testid=lessons] summary").click()
        page.wait_for_selector("[data-testid=lesson-select] option", state="attached")
        page.get_by_test_id("lesson-edit").click()
        page.wait_for_selector("[data-testid=lesson-edit-view]")
        page.screenshot(path=str(OUT / "lessons-editor-1280.png"))
        page.get_by_test_id("lesson-edit-cancel").click()
        page.get_by_test_id("lesson-handout-make").click()
        page.wait_for_selector("[data-testid=lesson-handout]", timeout=120_000)
        page.evaluate(SCROLL_TO_VIEW_5)
        page.screenshot(path=str(OUT / "lessons-handout-1280.png"))
        page.get_by_test_id("handout-close").click()
        with page.expect_download(timeout=120_000) as download:
            page.get_by_test_id("lesson-offline").click()
        file = Path(tmp) / "lesson.html"
        download.value.save_as(file)
        offline = browser.new_page(viewport={"width": 1280, "height": 720})
        offline.goto(file.as_uri())
        offline.wait_for_selector('body[data-ready="true"]')
        for _ in range(4):
            offline.keyboard.press("PageDown")
        offline.wait_for_timeout(500)
        offline.screenshot(path=str(OUT / "lessons-offline-1280.png"))
        browser.close()


if __name__ == "__main__":
    main()
