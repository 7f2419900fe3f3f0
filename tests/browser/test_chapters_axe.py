"""Every chapter of the lesson (but the two attention ones) checked by axe-core at WCAG 2.x A and AA,
the contrast of the shaded tables included."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.helpers import chapter_violations

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(
    "query",
    [
        "?chapter=rnn&step=fade",
        "?chapter=projections&step=q",
        "?chapter=scaling&step=spread",
        "?chapter=positions&step=sinusoid",
        "?chapter=positions&step=model",
        "?chapter=heads&step=heads&heads=3",
        "?chapter=heads&step=wo",
        "?chapter=heads&step=model",
        "?chapter=block&step=order",
        "?chapter=mistakes&step=softmax-columns",
    ],
)
def test_no_accessibility_violations(browser: Any, server: str, query: str) -> None:
    """axe-core at WCAG 2.x A and AA on each chapter (the shaded tables' contrast included)."""
    assert chapter_violations(browser, server, query) == []
