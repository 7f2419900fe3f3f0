"""How many generated examples a property test runs.

The default suite (`make test`) runs a share of them, enough to catch a regression in any one
operation; `make test-all` (ATTENTION_TEST_ALL=1) runs the full number each test was written with.
"""

from __future__ import annotations

import os

ALL = os.environ.get("ATTENTION_TEST_ALL") == "1"


def examples(full: int, default: int) -> int:
    """`full` examples under `make test-all`, `default` otherwise."""
    return full if ALL else default
