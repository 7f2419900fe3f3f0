from __future__ import annotations

import os
import tempfile

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.budget import ALL

# fixtures made once per session for every folder (a model, transformers' reference): imported into a
# test module instead, a session fixture would be a second one, made again
pytest_plugins = ["tests.model.fixtures", "tests.model.llama_fixtures"]

# in-process apps keep the classroom's SQLite in a folder of the test run's, not the user's data folder
os.environ.setdefault("ATTENTION_DATA_DIR", tempfile.mkdtemp(prefix="attention3d-tests-"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `full` run in `make test-all` (ATTENTION_TEST_ALL=1) only: the default suite skips them."""
    if ALL:
        return
    skip = pytest.mark.skip(reason="repeats other tests' checks: runs in make test-all (ATTENTION_TEST_ALL=1)")
    for item in items:
        if item.get_closest_marker("full"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def client() -> TestClient:
    return TestClient(create_app(backend="numpy"))
