from __future__ import annotations

import functools
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.budget import ALL

# fixtures made once per session for every folder (a model, transformers' reference): imported into a
# test module instead, a session fixture would be a second one, made again
pytest_plugins = ["tests.model.fixtures", "tests.model.llama_fixtures"]

# in-process apps keep the classroom's SQLite in a folder of the test run's, not the user's data folder
os.environ.setdefault("ATTENTION_DATA_DIR", tempfile.mkdtemp(prefix="attention3d-tests-"))


# Parallel runs (pytest-xdist: -n 3 --dist loadscope in pyproject's addopts). The tests of one module run
# on one worker, one after the other, so a module-scoped fixture (a page, a room, a kernel, a wheel, the
# transformers reference of test_llama) is made once; the modules of SPREAD share nothing costly, so their
# tests are spread one by one over the workers; the modules of a group run on one worker too, as they share
# session fixtures that cost seconds of CPU in each worker that makes them (torch and transformers imported,
# their reference models loaded; a PostgreSQL server initialised): a module joins a group by naming one of
# its fixtures (SHARED: found in the module's source, as xdist's controller knows node ids, not fixtures)
# or by GROUPS. FIRST: long modules and groups go out first, so that no worker starts one of them when the
# others are done. (A scheduler of our own: xdist 3.8's loadgroup marks groups in a nodeid attribute pytest
# 9.2 no longer reads.)
SPREAD = {
    f"tests/{m}.py"
    for m in (
        "browser/test_projector", "browser/test_layout", "browser/test_lesson", "browser/test_chapters_fit",
        "browser/test_model_mode", "browser/test_withhold", "browser/test_chapter_block", "browser/test_page",
        "browser/test_axe", "browser/test_exports", "browser/test_lesson_page", "browser/test_chapters_axe",
        "browser/test_chapter_heads", "browser/test_write", "browser/test_languages_lesson", "test_lan",
        "test_openapi",
    )
}  # fmt: skip
# transformers' references of SmolLM2 (tests/model/llama_fixtures.py: 15 s of CPU and more) and MiniLM
# (fixtures.py: ~5 s), once per worker that uses them; a module naming both goes with SmolLM2's, the
# first here. Two groups, not one: the modules of both together would keep one worker busy for minutes.
SHARED = {"hf_smollm": "smollm", "hf_minilm": "minilm"}
GROUPS = {
    "tests/model/test_llama_tiny.py": "minilm",  # tiny random Llamas, written through torch
    "tests/model/test_folders.py": "minilm",  # a tiny GPT-2, trained and saved through torch
    # a PostgreSQL server each (initdb); test_faults' and test_quiz's own run beside them, elsewhere
    **{f"tests/classroom/{m}.py": "postgresql" for m in ("test_lessons", "test_school_server")},
}
FIRST = (
    "tests/browser/test_projector_writing.py",
    "tests/notebook/test_lab_browser.py",
    "tests/model/test_llama.py",
    "tests/browser/test_classroom.py",  # 14 tests on one server of its own: 204 s with -n 0 at load ~9
    "tests/test_packaging.py",  # a wheel built (15 s) before its tests: last in the collection's order
    "tests/model/test_forward.py",  # the minilm group's
)


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@functools.cache
def _group(module: str) -> str:
    """The group of a test module (its own path when it has none)."""
    if module in GROUPS:
        return GROUPS[module]
    try:
        source = (Path(__file__).parent.parent / module).read_text(encoding="utf-8")
    except OSError:
        return module
    named = set(re.findall(r"\b(" + "|".join(SHARED) + r")\b", source))
    return next((group for fixture, group in SHARED.items() if fixture in named), module)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = _module(nodeid)
            return nodeid if module in SPREAD else _group(module)

    config.option.loadscopereorder = False  # the collection's order (FIRST first), not the largest module first
    return ByModule(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The modules of FIRST first (each module's tests stay together, in their order). Tests marked
    `full` run in `make test-all` (ATTENTION_TEST_ALL=1) only: the default suite skips them."""
    items.sort(key=lambda item: FIRST.index(m) if (m := _module(item.nodeid)) in FIRST else len(FIRST))
    if ALL:
        return
    skip = pytest.mark.skip(reason="repeats other tests' checks: runs in make test-all (ATTENTION_TEST_ALL=1)")
    for item in items:
        if item.get_closest_marker("full"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def client() -> TestClient:
    return TestClient(create_app(backend="numpy"))
