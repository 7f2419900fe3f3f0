"""Take the pictures of docs/languages.md: the masks chapter in Spanish, Chinese and Arabic, and the chapters
block (Chinese), tiles and scaling (Arabic), writing (Spanish) and rnn (a Chinese phone) (not a test).

    .venv/bin/python -m tests.browser.language_screenshots docs/screenshots [NAME…]

It starts a server of this checkout on a free port (tests/browser/conftest.py running_server).

Each language as its reader's browser asks for it (the context's locale), at 1280×720 and 390×844.
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, running_server

VIEW = "?chapter=masks&example=the-cat-ate-its-fish"
SHOTS: list[tuple[str, str, str, tuple[int, int]]] = [
    # name, the browser's language, query, viewport
    ("languages-es-1280", "es-ES", f"{VIEW}&step=causal&focus=1", (1280, 720)),
    ("languages-zh-1280", "zh-CN", f"{VIEW}&step=weights&focus=3", (1280, 720)),
    ("languages-ar-1280", "ar-EG", f"{VIEW}&step=weights&focus=3", (1280, 720)),
    ("languages-ar-phone", "ar-EG", f"{VIEW}&step=causal&focus=1", (390, 844)),
    ("languages-zh-block-1280", "zh-CN", "?chapter=block&step=add", (1280, 720)),
    ("languages-ar-tiles-1280", "ar-EG", "?chapter=tiles&step=read", (1280, 720)),
    ("languages-es-writing-1280", "es-ES", "?chapter=writing&step=candidates&n=6", (1280, 720)),
    ("languages-ar-scaling-1280", "ar-EG", "?chapter=scaling&step=unscaled", (1280, 720)),
    ("languages-zh-rnn-phone", "zh-CN", "?chapter=rnn&step=fade", (390, 844)),
]


def main(base: str, out: Path, only: list[str] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name, locale, query, (width, height) in SHOTS:
            if only and name not in only:
                continue
            page = browser.new_page(viewport={"width": width, "height": height}, reduced_motion="reduce", locale=locale)
            page.goto(base + "/" + query)
            page.wait_for_selector('#app[data-ready="true"]', timeout=120_000)
            if "chapter=masks" in query:  # the attention view: its flight to the frame
                page.wait_for_selector('#scene[data-animating="false"]')
            page.wait_for_timeout(300)  # the labels' last placement
            page.screenshot(path=str(out / f"{name}.png"))
            page.close()
        browser.close()


if __name__ == "__main__":
    with running_server() as server:
        main(server, Path(sys.argv[1]), sys.argv[2:] or None)
