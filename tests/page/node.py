"""A piece of the page's JavaScript run in Node, on the page's own modules: the entry bundled with
esbuild (the modules import three.js and each other as the browser does), run, and what it printed
with console.log read as JSON. Skips where npm's packages (esbuild) or node are missing."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "static" / "js"
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"


def run_in_node(source: str, **modules: str) -> Any:
    """The JSON that `source` (an ES module) prints. It imports the page's modules by placeholder names
    (`import { actions } from "ACTIONS"`), each given as a path under static/js (ACTIONS="actions.js")."""
    if not ESBUILD.exists() or not shutil.which("node"):
        pytest.skip("esbuild or node is not installed (npm ci)")
    for name, path in modules.items():
        source = source.replace(f'"{name}"', json.dumps(str(JS / path)))
    with tempfile.TemporaryDirectory() as tmp:
        entry = Path(tmp) / "check.entry.mjs"
        entry.write_text(source)
        bundle = Path(tmp) / "check.mjs"
        args = [str(ESBUILD), str(entry), "--bundle", "--format=esm", "--platform=node", f"--outfile={bundle}"]
        subprocess.run([*args, "--log-level=error"], check=True, cwd=ROOT)
        return json.loads(subprocess.run(["node", str(bundle)], check=True, capture_output=True, text=True).stdout)
