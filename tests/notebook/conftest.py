"""Fixtures shared with other test folders: the session's one Chromium, the tiny random GPT-2."""

from tests.browser.conftest import browser
from tests.model.conftest import tiny_gpt2_dir

__all__ = ["browser", "tiny_gpt2_dir"]
