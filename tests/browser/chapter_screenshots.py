"""Take the chapters' screenshots for docs/screenshots/ (not a test).

.venv/bin/uvicorn app.main:app --port 8123 &
.venv/bin/python -m tests.browser.chapter_screenshots http://127.0.0.1:8123 docs/screenshots
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

DESKTOP = (1280, 720)
PHONE = (390, 844)

# name, the page's query (chapter and step), viewport
SHOTS: list[tuple[str, str, tuple[int, int]]] = [
    ("chapter-rnn", "chapter=rnn&step=fade", DESKTOP),
    ("chapter-rnn-phone", "chapter=rnn&step=fade", PHONE),
    ("chapter-projections", "chapter=projections&step=q&tok=3", DESKTOP),
    ("chapter-scaling", "chapter=scaling&step=scaled&dk=512", DESKTOP),
    ("chapter-heads", "chapter=heads&step=heads&heads=3", DESKTOP),
    ("chapter-heads-wo", "chapter=heads&step=wo", DESKTOP),
    ("chapter-heads-model", "chapter=heads&step=model", DESKTOP),
    ("chapter-positions", "chapter=positions&step=plain", DESKTOP),
    ("chapter-positions-model", "chapter=positions&step=model", DESKTOP),
    ("chapter-block", "chapter=block&step=attention", DESKTOP),
    ("chapter-block-order", "chapter=block&step=order", DESKTOP),
    ("chapter-block-phone", "chapter=block&step=norm", PHONE),
    ("chapter-mistakes", "chapter=mistakes&step=mask-after-softmax", DESKTOP),
    ("chapter-mistakes-phone", "chapter=mistakes&step=no-scale", PHONE),
]


def main(base: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name, query, (width, height) in SHOTS:
            page = browser.new_page(viewport={"width": width, "height": height}, reduced_motion="reduce")
            page.goto(f"{base}/?{query}")
            step = dict(part.split("=", 1) for part in query.split("&"))["step"]
            page.wait_for_selector(f'#app[data-ready="true"][data-step="{step}"]', timeout=60_000)
            page.wait_for_timeout(500)  # the labels are placed on the frame after the answer
            page.screenshot(path=str(out / f"{name}.png"))
            page.close()
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
