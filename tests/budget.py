"""How much of the suite runs: `make test` (the default) or `make test-all` (ATTENTION_TEST_ALL=1).

examples(): a property test runs a share of its generated examples (a repeated browser check a share
of its repeats) by default, enough to catch a regression in any one operation, and the full number
it was written with under test-all. Tests
marked `@pytest.mark.full` (they repeat what other tests check) run under test-all only
(tests/conftest.py skips them otherwise).
"""

from __future__ import annotations

import os

ALL = os.environ.get("ATTENTION_TEST_ALL") == "1"


def examples(full: int, default: int) -> int:
    """`full` examples under `make test-all`, `default` otherwise."""
    return full if ALL else default
