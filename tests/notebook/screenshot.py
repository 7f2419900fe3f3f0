"""A screenshot of JupyterLab with the notebook view: python -m tests.notebook.screenshot OUT.png

Starts JupyterLab (tests/notebook/lab.py), runs the walkthrough in headless Chromium, puts the
first view on "its" at the mix step with the full mask, and saves the window.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.notebook.lab import run_walkthrough, running_lab


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as work, running_lab(Path(work)) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        run_walkthrough(page, base)
        view = page.locator(".attention3d-view").first
        view.locator("button.widget-toggle-button", has_text="full").click()
        view.locator("select").first.select_option(label="4: its")
        view.locator("button.widget-toggle-button", has_text="mix").click()
        view.locator(".a3d-arith").filter(has_text="z of “its”").wait_for()
        # the cell above the view at the top of the window, the view below it
        page.locator(".jp-Cell").nth(1).evaluate("cell => cell.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(1500)
        page.screenshot(path=str(out))
        browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
