"""What the browser tests share: the server's JSON, the NumPy panel's code run in a plain Python,
numbers compared within a tolerance, the page's number format, a canvas's drawn pixels, the
3D labels counted through a redraw, the chapter's layout checks, an axe-core run on a
chapter, and a download opened from its file."""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import LOCAL_SCHEMES, Watched, watched_page


def get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=60) as r:
        return json.loads(r.read())


def post(base: str, path: str, body: dict[str, Any], timeout: float = 60) -> Any:
    req = urllib.request.Request(base + path, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def run_python(code: str, timeout: float = 120) -> Any:
    """The panel's code in a plain Python with NumPy (the venv's); its last line is one JSON object."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


_FRAMES = """(n) => new Promise((done) => {
  const next = (left) => (left ? requestAnimationFrame(() => next(left - 1)) : done());
  next(n);
})"""


def next_frames(page: Any, n: int = 3) -> None:
    """Waits until `page` has run `n` more animation frames: a drawing it asked for before this call
    (a 3D view renders on its next frame) is on screen, however slow the machine."""
    page.evaluate(_FRAMES, n)


_WATCH_LABELS = """([layerAt, labels]) => {
  const layer = document.querySelector(layerAt);
  const shown = () => [...layer.querySelectorAll(labels)].filter((e) => e.style.display !== 'none').length;
  window.__fewestLabels = shown();
  // counted once the task that changed them has run (its microtasks too): what the page can paint
  const count = () => { window.__fewestLabels = Math.min(window.__fewestLabels, shown()); };
  new MutationObserver(() => queueMicrotask(count))
    .observe(layer, { childList: true, subtree: true, attributes: true, attributeFilter: ['style'] });
  return window.__fewestLabels;
}"""
STAGE_LABELS = ("#chapter-stage .label-layer", ".stage-label")  # a chapter's 3D drawing (scene/stage.js)


def watch_labels(w: Watched, where: tuple[str, str] = STAGE_LABELS) -> int:
    """From its next frame on, the page counts the labels `where` = (their label layer, the labels)
    shown after each task that changes them (fewest_labels): how many are shown now."""
    next_frames(w.page, 2)
    shown: int = w.page.evaluate(_WATCH_LABELS, list(where))
    return shown


def labels_shown(w: Watched, where: tuple[str, str] = STAGE_LABELS) -> int:
    """How many of the labels `where` are shown now."""
    shown: int = w.page.evaluate(
        "([layerAt, labels]) => [...document.querySelector(layerAt).querySelectorAll(labels)]"
        ".filter((e) => e.style.display !== 'none').length",
        list(where),
    )
    return shown


def fewest_labels(w: Watched) -> int:
    """The fewest of the watched labels shown at once since watch_labels."""
    fewest: int = w.page.evaluate("window.__fewestLabels")
    return fewest


def close(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b, strict=True))
    return math.isclose(float(a), float(b), abs_tol=tol)


def f3(x: float) -> str:
    s = f"{x:.3f}"
    return "0.000" if s == "-0.000" else s.replace("-", "\u2212")


def canvas_pixels(w: Watched, testid: str, count: str) -> Any:
    """A screenshot of the canvas `testid`, decoded in the page; `count` is the body of a JS function
    of `d`, the screenshot's RGBA bytes, and what it returns is returned."""
    png = w.page.get_by_test_id(testid).screenshot()
    return w.page.evaluate(
        """async (b64) => {
            const img = new Image();
            img.src = "data:image/png;base64," + b64;
            await img.decode();
            const c = document.createElement("canvas");
            c.width = img.width; c.height = img.height;
            const g = c.getContext("2d");
            g.drawImage(img, 0, 0);
            const d = g.getImageData(0, 0, c.width, c.height).data;
            """
        + count
        + "\n}",
        base64.b64encode(png).decode(),
    )


def drawn_pixels(w: Watched) -> int:
    """Pixels of the chapter's canvas that differ from its empty background."""
    counted: int = canvas_pixels(
        w,
        "stage-canvas",
        """const [r0, g0, b0] = [d[0], d[1], d[2]];  // a corner is background
        let changed = 0;
        for (let i = 0; i < d.length; i += 4) {
            if (Math.abs(d[i] - r0) + Math.abs(d[i + 1] - g0) + Math.abs(d[i + 2] - b0) > 40) changed++;
        }
        return changed;""",
    )
    return counted


def chapter_fits(w: Watched) -> None:
    """No sideways scrolling, and the 3D view, the explanation and the panel do not overlap."""
    width = w.page.evaluate("document.documentElement.scrollWidth")
    assert width <= w.page.viewport_size["width"] + 1, f"the page is {width} px wide"
    boxes = w.page.evaluate(
        """() => ['chapter-stage', 'chapter-text', 'chapter-panel'].map((id) => {
            const r = document.getElementById(id).getBoundingClientRect();
            return [r.left, r.top, r.right, r.bottom];
        })"""
    )
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            a, b = boxes[i], boxes[j]
            overlap = min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1
            assert not overlap, f"boxes {i} and {j} overlap: {a} {b}"


def chapter_violations(browser: Any, server: str, query: str, click: str | None = None) -> list[Any]:
    """axe-core's WCAG 2.x A and AA violations on the chapter at `query` (skips without axe-core), after a press
    of the button of test id `click` if given (a guess that shows a step's answer)."""
    from tests.browser.test_axe import AXE, _violations

    if not AXE.exists():
        pytest.skip("axe-core is not installed (npm ci)")
    with watched_page(browser, server, bypass_csp=True) as w:
        w.page.base = server
        found: list[Any] = _violations(w.page, query, '#app[data-ready="true"] #chapter-text:not(:empty)', click)
    return found


def download(w: Watched, button: Any, folder: Path, timeout: float = 30_000) -> Path:
    """Clicks `button` (a locator) and saves what it downloads in `folder`, under the page's file name."""
    with w.page.expect_download(timeout=timeout) as info:
        button.click()
    path: Path = folder / info.value.suggested_filename
    info.value.save_as(path)
    return path


@contextmanager
def offline_page(browser: Any, path: Path, timeout: float = 30_000, **options: Any) -> Iterator[Any]:
    """The downloaded page `path` opened from its file: URL in a fresh context, ready (body[data-ready]).
    Any request but file:, data:, blob: or about: is blocked and fails the test, as does an error on
    the page or its console. `options` for the context (e.g. reduced_motion="reduce")."""
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 800}, **options})
    outside: list[str] = []
    errors: list[str] = []

    def guard(route: Any) -> None:
        if route.request.url.split(":")[0] in {*LOCAL_SCHEMES, "file"}:
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(path.as_uri())
        page.wait_for_selector('body[data-ready="true"]', timeout=timeout)
        yield page
    finally:
        context.close()
    assert not outside, outside
    assert not errors, errors
