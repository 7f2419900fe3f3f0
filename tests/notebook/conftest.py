"""The browser test of the notebook view drives the same Chromium fixture as tests/browser."""

from tests.browser.conftest import browser

__all__ = ["browser"]
