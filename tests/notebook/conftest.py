"""Fixtures shared with other test folders: the session's one Chromium (the tiny random GPT-2 is the
suite's, tests/model/fixtures.py)."""

from tests.browser.conftest import browser

__all__ = ["browser"]
