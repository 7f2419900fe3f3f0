"""What the chapter tests share (not a test module): the sizes they run at, the page's number
formats, opening a chapter at a step, what every opened chapter shows, and the check that nothing
overlaps or runs off the screen."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from tests.browser.conftest import Watched
from tests.browser.helpers import chapter_fits
from tests.browser.registry import CHAPTERS

VIEWPORTS = [(1280, 720), (390, 844)]
ANIMAL = "The animal didn't cross the street because it was too tired."


def f4(x: float) -> str:
    return f"{x:.4f}"


def sig(x: float) -> str:
    """The page's sig(): 4 decimals, or e-notation below 0.001."""
    if x != 0 and abs(x) < 0.001:
        mantissa, exp = f"{x:.2e}".split("e")
        return f"{mantissa}e{int(exp)}".replace("-", "\u2212")
    return f"{x:.4f}"


def num(text: str) -> float:
    return float(text.strip().replace("\u2212", "-"))


def open_at_step(w: Watched, query: str, size: tuple[int, int], step: str) -> None:
    w.page.set_viewport_size({"width": size[0], "height": size[1]})
    w.page.goto(w.base + "/?" + query)
    wait(w, step)


def wait(w: Watched, step: str) -> None:
    w.page.wait_for_selector(f'#app[data-ready="true"][data-step="{step}"]', timeout=60_000)
    w.page.wait_for_selector("#chapter-text:not(:empty)", timeout=30_000)


def open_chapter(w: Watched, query: str, size: tuple[int, int] = (1280, 720)) -> None:
    w.page.set_viewport_size({"width": size[0], "height": size[1]})
    w.page.goto(w.base + "/?" + query)
    w.page.wait_for_selector('#app[data-ready="true"]', timeout=60_000)
    w.page.wait_for_selector("#chapter-text:not(:empty)", timeout=30_000)


# What every chapter shows once opened: its title (drawn), "Chapter k of n", its numbers and its NumPy
# code, and not "coming"
OPENED = """() => {
  const attention = document.getElementById('app').dataset.layout === 'attention';
  const title = document.querySelector(attention ? '[data-testid=step-title]' : '[data-testid=chapter-title]');
  const drawn = (e) => e && e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden';
  return {
    title: drawn(title) ? title.innerText.trim() : '',
    line: document.querySelector('[data-testid=chapter-name]')?.innerText ?? '',
    numbers: document.querySelectorAll('#lesson-numbers li').length,
    code: document.querySelector('[data-testid=numpy-code]')?.textContent ?? '',
    coming: Boolean(drawn(document.querySelector('[data-testid=chapter-coming]'))),
  };
}"""


def shows_chapter(w: Watched, chapter: str) -> None:
    """The page, ready on `chapter`, shows what every opened chapter shows (OPENED)."""
    seen = w.page.evaluate(OPENED)
    assert seen["title"] and not seen["coming"], (chapter, w.page.viewport_size, seen)
    where = f"Chapter {CHAPTERS.index(chapter) + 1} of {len(CHAPTERS)}"
    assert where in seen["line"], (chapter, w.page.viewport_size, seen)
    assert seen["numbers"] >= 1 and "import numpy as np" in seen["code"], (chapter, w.page.viewport_size, seen)


def fits(w: Watched) -> None:
    """No sideways scrolling; the 3D view, the explanation and the panel do not overlap; nor do the
    3D view's labels (each label's box against every other's)."""
    chapter_fits(w)
    labels = w.page.evaluate(
        """() => [...document.querySelectorAll('#chapter-stage .stage-label')]
            .filter((e) => e.style.display !== 'none' && e.textContent.trim())
            .map((e) => {
                const r = e.getBoundingClientRect();
                return [e.textContent, r.left, r.top, r.right, r.bottom];
            })"""
    )
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            a, b = labels[i][1:], labels[j][1:]
            overlap = min(a[2], b[2]) - max(a[0], b[0]) > 2 and min(a[3], b[3]) - max(a[1], b[1]) > 2
            assert not overlap, f"3D labels {labels[i][0]!r} and {labels[j][0]!r} overlap"


def param(w: Watched, name: str) -> str:
    values: list[str] = parse_qs(urlparse(w.page.url).query)[name]
    return values[0]
