"""Take the projector view's screenshots for docs/screenshots/ (not a test): every chapter at
1280×720 and 1920×1080, and a follower's phone (390×844) during a quiz.

    ATTENTION_TEACHER_TOKEN=T .venv/bin/uvicorn app.main:app --port 8123 &
    .venv/bin/python -m tests.browser.classroom_screenshots http://127.0.0.1:8123 T docs/screenshots [chapter…]
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

# chapter, step (None: its first), the query's extra parameters
VIEWS: list[tuple[str, str | None, str]] = [
    ("rnn", None, ""),
    ("projections", None, ""),
    ("steps", "mix", "&example=the-cat-ate-its-fish&focus=3"),
    ("scaling", None, ""),
    ("masks", "difference", ""),
    ("heads", None, ""),
    ("positions", None, ""),
    ("block", None, ""),
    ("mistakes", None, ""),
]
SIZES = [(1280, 720), (1920, 1080)]


def main(base: str, token: str, out: Path, only: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for chapter, step, extra in VIEWS:
            if only and chapter not in only:
                continue
            for width, height in SIZES:
                page = browser.new_page(viewport={"width": width, "height": height}, reduced_motion="reduce")
                query = f"?token={token}&present=1&chapter={chapter}" + (f"&step={step}" if step else "") + extra
                page.goto(base + "/" + query)
                page.wait_for_selector('#app[data-ready="true"]', timeout=60_000)
                page.wait_for_selector('[data-testid="join-qr"]')
                page.wait_for_timeout(800)
                page.screenshot(path=str(out / f"projector-{chapter}-{width}.png"))
                print(out / f"projector-{chapter}-{width}.png")
                page.close()
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4:])
