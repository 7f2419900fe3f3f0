"""axe-core (npm, pinned) in the real page: no violation at WCAG 2.x levels A and AA, for the
walkthrough, the real model's view, and a phone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import ROOT, watched_page
from tests.browser.helpers import next_frames

pytestmark = pytest.mark.browser

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
ANIMAL = "The animal didn't cross the street because it was too tired."


@pytest.fixture
def axe_page(browser: Any, server: str) -> Iterator[Any]:
    if not AXE.exists():
        pytest.skip("axe-core is not installed (npm ci)")
    # a watched page (errors fail the test) that lets axe's script in past the page's CSP
    with watched_page(browser, server, bypass_csp=True) as w:
        w.page.base = server
        yield w.page


def _violations(page: Any, query: str, ready: str = '#app[data-ready="true"]', click: str | None = None) -> list[str]:
    """axe's violations on the page at `query`, once `ready` shows (and the button of test id `click` is pressed)."""
    page.goto(page.base + "/" + query)
    page.wait_for_selector(ready, timeout=30_000)
    if click:
        page.get_by_test_id(click).click()
    next_frames(page)  # what the answer changes is drawn
    page.add_script_tag(path=str(AXE))
    result: dict[str, Any] = page.evaluate(
        "() => axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — " + "; ".join(n["target"][0] for n in v["nodes"][:5])
        for v in result["violations"]
    ]


@pytest.mark.parametrize("query", ["", "?step=mix&mask=causal"])
def test_walkthrough_has_no_violations(axe_page: Any, query: str) -> None:
    assert _violations(axe_page, query) == []


def test_model_mode_has_no_violations(axe_page: Any) -> None:
    from urllib.parse import quote

    assert _violations(axe_page, f"?sentence={quote(ANIMAL)}&layer=3&head=1&step=softmax") == []


def test_phone_has_no_violations(axe_page: Any) -> None:
    axe_page.set_viewport_size({"width": 390, "height": 844})
    assert _violations(axe_page, "") == []
