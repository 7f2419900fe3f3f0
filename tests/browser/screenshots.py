"""Take the page's screenshots for docs/screenshots/ (not a test).

    .venv/bin/uvicorn app.main:app --port 8123 &
    .venv/bin/python -m tests.browser.screenshots http://127.0.0.1:8123 docs/screenshots

Pictures 1-9 were reduced to 256 colours (Pillow's quantize) to stay small; 10-15 (projector
and phone, issue 11) are as Chromium wrote them. Only some: NAME… as further arguments.
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import FloatRect, sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

ANIMAL = quote("The animal didn't cross the street because it was too tired.")
PHONE_TABLE = ".lesson > .table-wrap"  # on a phone .lesson is display: contents: no box of its own
PIECES = quote("Transformers read unbelievably long words in pieces.")

SHOTS: list[tuple[str, str, tuple[int, int], bool | str]] = [
    # name, query, viewport, full page (or the CSS selector of the one element to show)
    ("1-score-its", "?focus=3&step=score", (1280, 800), False),
    ("2-softmax-its", "?focus=3&step=softmax", (1280, 800), False),
    ("3-mix-its", "?focus=3&step=mix", (1280, 800), False),
    ("4-causal-cat", "?focus=1&step=softmax&mask=causal", (1280, 800), False),
    ("5-tablet-mask", "?focus=3&step=mask&mask=causal", (768, 1024), False),
    ("6-compare-and-editor", "?focus=3&step=softmax&mask=causal", (1280, 800), True),
    # sentence mode: the real model
    ("7-model-it-finds-animal", f"?sentence={ANIMAL}&layer=3&head=1&step=softmax&focus=10", (1280, 800), False),
    ("8-model-tablet-merged", f"?sentence={PIECES}&layer=2&head=11&step=softmax&focus=8&merge=1", (768, 1024), False),
    ("9-model-overview", f"?sentence={ANIMAL}&layer=3&head=1&step=softmax&focus=10", (1280, 800), "#overview"),
    # a projector (1280 × 720): the arithmetic and the score table on the first screen
    ("10-projector-score", "?focus=3&step=score", (1280, 720), False),
    ("11-projector-model", f"?sentence={ANIMAL}&layer=3&head=1&step=softmax&focus=10", (1280, 720), False),
    # a phone (390 × 844): compact head, the 3D view on the first screen, Back / Next at the bottom
    ("12-phone-softmax", "?focus=3&step=softmax", (390, 844), False),
    ("13-phone-model", f"?sentence={ANIMAL}&layer=3&head=1&step=softmax&focus=10", (390, 844), False),
    ("14-phone-model-table", f"?sentence={ANIMAL}&layer=3&head=1&step=softmax&focus=10", (390, 844), PHONE_TABLE),
    ("15-phone-overview", f"?sentence={ANIMAL}&layer=3&head=1&step=softmax&focus=10", (390, 844), "#overview"),
]


def main(base: str, out: Path, only: list[str] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name, query, (width, height), full in SHOTS:
            if only and name not in only:
                continue
            page = browser.new_page(viewport={"width": width, "height": height}, reduced_motion="reduce")
            page.goto(base + "/" + query)
            page.wait_for_selector('#app[data-ready="true"]')
            page.wait_for_selector('#scene[data-animating="false"]')
            if "sentence=" in query:
                page.wait_for_selector('#overview-grid[data-count="72"]', timeout=60_000)
            page.wait_for_timeout(300)  # the labels' last placement
            if isinstance(full, str):
                # a part of the page: a phone's floating Back / Next would land in its middle
                page.evaluate(
                    "for (const id of ['prev-step', 'next-step'])"
                    " document.getElementById(id).style.visibility = 'hidden'"
                )
                page.locator(full).screenshot(path=str(out / f"{name}.png"))
            elif full:
                top = page.evaluate("document.getElementById('compare-title').getBoundingClientRect().top + scrollY")
                bottom = page.evaluate("document.querySelector('.editor').getBoundingClientRect().bottom + scrollY")
                clip: FloatRect = {"x": 0, "y": top - 16, "width": width, "height": bottom - top + 32}
                page.screenshot(path=str(out / f"{name}.png"), clip=clip, full_page=True)
            else:
                page.screenshot(path=str(out / f"{name}.png"))
            page.close()
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3:] or None)
