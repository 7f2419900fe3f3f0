from __future__ import annotations

import os
import tempfile

import pytest
from fastapi.testclient import TestClient

from app.main import create_app

# in-process apps keep the classroom's SQLite in a folder of the test run's, not the user's data folder
os.environ.setdefault("ATTENTION_DATA_DIR", tempfile.mkdtemp(prefix="attention3d-tests-"))


@pytest.fixture(scope="session")
def client() -> TestClient:
    return TestClient(create_app(backend="numpy"))
