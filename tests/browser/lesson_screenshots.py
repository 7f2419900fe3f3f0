"""Take the lesson frame's screenshots for docs/screenshots/ (not a test).

.venv/bin/uvicorn app.main:app --port 8123 &
.venv/bin/python -m tests.browser.lesson_screenshots http://127.0.0.1:8123 docs/screenshots
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS


def contents(page: Any) -> None:
    page.get_by_test_id("chapters-toggle").click()


def guess_fish(page: Any) -> None:
    page.get_by_test_id("predict-key-4").click()
    page.wait_for_selector('#app[data-predict="true"]')


def nothing(page: Any) -> None:
    return None


# name, query, viewport, action, the CSS selector of the element to show (or None: the viewport)
SHOTS: list[tuple[str, str, tuple[int, int], Callable[[Any], None], str | None]] = [
    ("lesson-1-contents", "?focus=3&step=score", (1280, 720), contents, None),
    ("lesson-2-numpy-softmax", "?focus=3&step=softmax", (1280, 720), nothing, "#numpy"),
    ("lesson-3-predict-waiting", "?focus=3&step=softmax&predict=1", (1280, 720), nothing, ".lesson"),
    ("lesson-4-predict-revealed", "?focus=3&step=softmax&predict=1", (1280, 720), guess_fish, ".lesson"),
    ("lesson-5-masks-difference", "?chapter=masks&step=difference&focus=1", (1280, 720), nothing, "#compare"),
    ("lesson-6-phone-contents", "?focus=3&step=mix", (390, 844), contents, None),
]


def main(base: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name, query, (width, height), action, selector in SHOTS:
            page = browser.new_page(viewport={"width": width, "height": height}, reduced_motion="reduce")
            page.goto(base + "/" + query)
            page.wait_for_selector('#app[data-ready="true"]')
            action(page)
            if selector:
                page.locator(selector).screenshot(path=str(out / f"{name}.png"))
            else:
                page.screenshot(path=str(out / f"{name}.png"))
            page.close()
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
