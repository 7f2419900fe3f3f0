"""The project installs as a plain (non-editable) wheel that carries its page, and starts from the CLI."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from app import cli
from app.web.server import GuardedHttp

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return next(out.glob("attention_3d-*.whl"))


def test_wheel_carries_code_page_and_vendored_three(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "app/main.py",
        "app/attention.py",
        "app/templates/index.html",
        "app/static/vendor/three/three.module.js",
        "app/static/vendor/three/three.core.js",
        "app/static/vendor/swagger-ui/swagger-ui-bundle.js",
    ):
        assert needed in names, needed
    assert not any(n.startswith(("tests/", "node_modules/")) for n in names)


def test_installed_wheel_serves_the_page_from_its_own_folder(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)], check=True
    )
    probe = (
        "import app.web.assets as a, app.main as m; from fastapi.testclient import TestClient;"
        "c = TestClient(m.app); print(a.STATIC_DIR);"
        "print(c.get('/').status_code, c.get('/static/vendor/three/three.module.js').status_code)"
    )
    # run from an unrelated folder, the installed copy first on the path
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    static_dir, statuses = done.stdout.split("\n")[:2]
    assert Path(static_dir) == site / "app" / "static"
    assert statuses == "200 200"


def test_cli_defaults_to_localhost(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}
    monkeypatch.setattr("app.cli.uvicorn.run", lambda app, **kw: seen.update(app=app, **kw))
    cli.main([])
    wanted = {"app": "app.main:app", "host": "127.0.0.1", "port": 8000, "ws_per_message_deflate": False}
    assert {k: seen[k] for k in wanted} == wanted
    assert seen["http"] is GuardedHttp  # the guarded protocol: header and body deadlines, per-address limits
    cli.main(["--host", "0.0.0.0", "--port", "9001"])
    assert seen["host"] == "0.0.0.0" and seen["port"] == 9001


def test_python_dash_m_app_has_help() -> None:
    done = subprocess.run([sys.executable, "-m", "app", "--help"], capture_output=True, text=True, check=True, cwd=ROOT)
    assert "--open" in done.stdout and "--port" in done.stdout
