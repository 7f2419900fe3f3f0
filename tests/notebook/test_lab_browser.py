"""The walkthrough in real JupyterLab, in headless Chromium: the pythreejs view is drawn and answers.

The test starts JupyterLab itself (a free port of 127.0.0.1, a token, a temporary root and
temporary Jupyter/IPython folders, so nothing outside is read or written), opens
notebooks/walkthrough.ipynb in Chromium, runs every cell, and checks: the 3-D canvas is drawn
(not just background), an orbit drag changes it, a click on the step widget changes it (and the
kernel's arithmetic follows), no console error but pythreejs's known DirectionalLight message,
and no request leaves 127.0.0.1 (the page guard of tests/browser/conftest.py blocks and reports any).
"""

from __future__ import annotations

import base64
import importlib.util
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import Watched, watched_page
from tests.notebook.lab import run_walkthrough, running_lab

# looked up, not imported: importing jupyterlab costs ~4 s, and every worker of the suite collects this file
_MISSING = [m for m in ("jupyterlab", "ipykernel", "pythreejs") if importlib.util.find_spec(m) is None]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(_MISSING), reason=f"the notebook extra is not installed (no {', '.join(_MISSING)})"),
]

KNOWN_ERROR = "Error setting state: t.on is not a function"  # pythreejs 2.4.2's DirectionalLight; the light works
BACKGROUND = (0xF4, 0xF3, 0xEE)  # the scene's background, as on the page


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_lab(tmp_path_factory.mktemp("lab")) as base:
        yield base


# Pixels of PNG screenshots, read by the browser itself (no imaging library needed).
_PIXELS = """async ([a, b, bg]) => {
  const load = (b64) => new Promise((ok, fail) => {
    const img = new Image();
    img.onload = () => ok(img);
    img.onerror = fail;
    img.src = "data:image/png;base64," + b64;
  });
  const read = async (b64) => {
    const img = await load(b64);
    const c = document.createElement("canvas");
    c.width = img.width;
    c.height = img.height;
    const ctx = c.getContext("2d");
    ctx.drawImage(img, 0, 0);
    return ctx.getImageData(0, 0, c.width, c.height).data;
  };
  const pa = await read(a);
  const pb = b ? await read(b) : null;
  let drawn = 0, changed = 0;
  const total = pa.length / 4;
  for (let i = 0; i < pa.length; i += 4) {
    if ([0, 1, 2].some((c) => Math.abs(pa[i + c] - bg[c]) > 24)) drawn++;
    if (pb && [0, 1, 2].reduce((s, c) => s + Math.abs(pa[i + c] - pb[i + c]), 0) > 30) changed++;
  }
  return { drawn: drawn / total, changed: changed / total };
}"""


def shot(canvas: Any) -> str:
    return base64.b64encode(canvas.screenshot()).decode()


def pixels(w: Watched, a: str, b: str | None = None) -> dict[str, float]:
    result: dict[str, float] = w.page.evaluate(_PIXELS, [a, b, list(BACKGROUND)])
    return result


def settled(w: Watched, canvas: Any, timeout: float = 15) -> tuple[str, float]:
    """A screenshot of the canvas once it is drawn (more than background) and still (the same twice in a
    row), with its drawn fraction; after `timeout` s, the last one."""
    deadline = time.monotonic() + timeout
    before = ""
    while True:
        now = shot(canvas)
        fraction = pixels(w, now)["drawn"]
        if (fraction > 0.03 and now == before) or time.monotonic() > deadline:
            return now, fraction
        before = now
        w.page.wait_for_timeout(250)


def changed_from(w: Watched, canvas: Any, before: str, timeout: float = 15) -> tuple[str, float]:
    """Wait until the canvas looks different from `before` (the kernel's update travels, then a frame)."""
    deadline = time.monotonic() + timeout
    while True:
        now = shot(canvas)
        fraction = pixels(w, now, before)["changed"]
        if fraction > 0.005 or time.monotonic() > deadline:
            return now, fraction
        w.page.wait_for_timeout(250)


def test_walkthrough_runs_in_jupyterlab_and_draws_in_3d(browser: Any, lab: str) -> None:
    with watched_page(browser, lab) as w:
        w.expect_console_error(KNOWN_ERROR)
        page = w.page
        run_walkthrough(page, lab)
        outputs = page.locator(".jp-OutputArea-output pre")
        text = "\n".join(outputs.all_text_contents())
        assert "'it' -> 'animal': 0.677" in text
        assert "'its' -> 'cat': 0.895" in text
        assert "'cat' -> 'the': 0.500, 'cat' -> 'cat': 0.500  (50/50)" in text
        assert page.locator('[data-mime-type="application/vnd.jupyter.error"]').count() == 0

        views = page.locator(".attention3d-view")
        assert views.count() == 2  # the example and the sentence
        canvas = views.first.locator("canvas").first
        canvas.scroll_into_view_if_needed()
        box = canvas.bounding_box()
        assert box is not None and box["width"] == 600 and box["height"] == 420  # not squashed: aspect 600/420
        first, drawn = settled(w, canvas)
        assert drawn > 0.03, "the pythreejs canvas shows only background"
        assert settled(w, views.nth(1).locator("canvas").first)[1] > 0.03

        # an orbit drag turns the camera
        canvas.scroll_into_view_if_needed()
        box = canvas.bounding_box()
        assert box is not None
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        for i in range(1, 9):
            page.mouse.move(x + 18 * i, y + 6 * i)
        page.mouse.up()
        orbited, fraction = changed_from(w, canvas, first)
        assert fraction > 0.005, f"the orbit drag did not change the drawing ({fraction:.4f} of the pixels)"

        # the step widget: back to "score" (the causal links of "cat" are scores now, not weights)
        arith = views.first.locator(".a3d-arith")
        assert "Weights of “cat”" in arith.inner_text()
        views.first.locator("button.widget-toggle-button", has_text="score").click()
        arith.filter(has_text="q of “cat”").wait_for(timeout=15_000)  # the kernel redrew the panel
        stepped, fraction = changed_from(w, canvas, orbited)
        assert fraction > 0.002, f"changing the step did not change the drawing ({fraction:.4f} of the pixels)"
        assert pixels(w, stepped)["drawn"] > 0.03
