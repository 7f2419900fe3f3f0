"""JupyterLab for the notebook view's browser test and screenshot: started here, isolated, on 127.0.0.1.

running_lab() starts `python -m jupyterlab` of this Python on a free port with a token, serving a
copy of notebooks/walkthrough.ipynb from a temporary root, with its config, data, runtime,
settings, workspaces and IPython folders (and HOME) in a temporary folder: nothing outside is read
or written. JupyterLab's news and update checks are off and its extension manager is read-only, so
the server asks nothing of the network either. run_walkthrough() opens the notebook in a
Playwright page and runs every cell.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.servers import answers, stop

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "T"


@contextmanager
def running_lab(workdir: Path) -> Iterator[str]:
    """A JupyterLab server of this Python on a free port, serving a copy of the walkthrough from `workdir`."""
    root = workdir / "root"
    root.mkdir()
    shutil.copy(ROOT / "notebooks" / "walkthrough.ipynb", root / "walkthrough.ipynb")
    home = workdir / "home"
    labconfig = home / "config" / "labconfig"
    labconfig.mkdir(parents=True)
    # no "get Jupyter news?" prompt (and no news fetched): nothing may leave the machine
    disabled = {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}
    (labconfig / "page_config.json").write_text(json.dumps(disabled))
    # every cell in the DOM (no windowing), so the test reads all outputs wherever they are scrolled
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")},
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "IPYTHONDIR": str(home / "ipython"),
        "ATTENTION_BACKEND": "numpy",
    }
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--allow-root",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run the cells by command, not by menu clicks
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    log = (home / "lab.log").open("w")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    if not answers(f"{base}/api/status?token={TOKEN}", proc, seconds=60, pause=0.2):
        raise RuntimeError(f"JupyterLab did not start:\n{(home / 'lab.log').read_text()[-3000:]}")
    try:
        yield base
    finally:
        stop(proc, 15)
        log.close()


# Run every cell, as the Run menu does; Playwright's evaluate has no timeout of its own, so the wait is
# bounded here: "stalled" when the kernel's session or the run did not finish within `ms`.
RUN_ALL = """async (ms) => {
  const within = (p) => Promise.race([p, new Promise((r) => setTimeout(() => r("stalled"), ms))]);
  const panel = window.jupyterapp.shell.currentWidget;
  if ((await within(panel.sessionContext.ready)) === "stalled") return "stalled";
  return await within(window.jupyterapp.commands.execute("notebook:run-all-cells"));
}"""


def run_walkthrough(page: Any, base: str) -> None:
    """Open the walkthrough, run every cell, and wait for the last one's output.

    JupyterLab once left a run of all cells waiting for ever, its kernel idle and never asked (a fresh
    clone's make test, 7 Dec: the run hung until it was killed): a run that stalls for 90 s is tried
    again once in a reloaded tab, as a person would, and a second stall fails the test."""
    for attempt in (1, 2):
        page.goto(f"{base}/lab/tree/walkthrough.ipynb?token={TOKEN}&reset")
        page.wait_for_function(
            "() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel", timeout=90_000
        )
        for dialog in page.locator(".jp-Dialog").all():  # e.g. a kernel choice: accept what it offers
            dialog.locator(".jp-mod-accept").click()
        page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
        ok = page.evaluate(RUN_ALL, 90_000)
        if ok != "stalled":
            break
        assert attempt == 1, "running the walkthrough's cells stalled twice (90 s each)"
    assert ok is True, "a cell of the walkthrough failed"
    page.locator(".jp-OutputArea-output pre").filter(has_text="'it' -> 'animal'").wait_for(timeout=60_000)
