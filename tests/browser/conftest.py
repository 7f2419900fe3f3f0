"""A live server and headless Chromium for the browser tests.

The server is the real app (`app.main:app` under uvicorn) on a free port of 127.0.0.1; the
browser is Debian's Chromium (its headless shell) driven by Playwright (WebGL through SwiftShader, no GPU).
Every test page fails its test on a console error, an uncaught exception, or a request to
anywhere but 127.0.0.1 (such a request is also blocked).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.servers import answers, free_port, stop

ROOT = Path(__file__).resolve().parents[2]
# Chromium's headless shell (Debian's chromium-headless-shell, what Playwright itself runs headless):
# the same engine without the browser's window machinery, half the CPU of `chromium --headless`
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
CHROMIUM = os.environ.get("CHROMIUM") or (HEADLESS_SHELL if Path(HEADLESS_SHELL).exists() else "/usr/bin/chromium")
CHROMIUM_ARGS = [
    # one renderer process per site in a context (every test page is on 127.0.0.1): a context kept for
    # the next test (watched_page) loads its page into the process that has the page's code compiled
    # already, half the renderer's CPU of a load in a new process (0.25-0.3 s against 0.5-0.55 s)
    "--process-per-site",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_SCHEMES = {"data", "blob", "about"}


_bundled = False


def build_bundle() -> None:
    """The page's bundle from the sources as they are (once per test session), so the tests see what
    `make run` serves; without node the server serves the sources, which is the same page. Parallel
    workers (pytest-xdist) take turns on a lock: the first builds, the others of the same run find it built."""
    global _bundled
    if not _bundled and (ROOT / "node_modules" / ".bin" / "esbuild").exists():
        run = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")  # the same in every worker of one run
        dist = ROOT / "static" / "dist"
        dist.mkdir(parents=True, exist_ok=True)
        built = dist / ".built-by-run"
        with open(dist / ".build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not run or not built.exists() or built.read_text() != run:
                subprocess.run(["node", "scripts/build.mjs"], cwd=ROOT, check=True, capture_output=True)
                built.write_text(run)
    _bundled = True


@contextmanager
def running_server() -> Iterator[str]:
    """A fresh server process (its model not loaded yet) on a free port; its base URL."""
    build_bundle()
    port = free_port()
    env = {**os.environ, "ATTENTION_BACKEND": "numpy"}
    # the classroom: a known teacher token, and saved lessons in a folder of this run, not the user's
    # (set, not defaulted: an in-process test before may have left a generated token in this worker's
    # environment: app.classroom.auth.teacher_token() keeps one there for the process)
    env["ATTENTION_TEACHER_TOKEN"] = "browser-tests-teacher-token"
    data = env["ATTENTION_DATA_DIR"] = tempfile.mkdtemp(prefix="attention3d-data-")
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--log-level", "warning"], cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        if not answers(base + "/api/examples", proc, seconds=30):
            raise RuntimeError(f"the server did not start on {base}")
        yield base
    finally:
        stop(proc, 10)
        shutil.rmtree(data, ignore_errors=True)  # its lessons and rooms (171 such folders were left in /tmp)


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    with running_server() as base:
        yield base


_LAUNCHED: list[Any] = []  # the session's one Chromium; tests/notebook/conftest.py imports this fixture too


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (set CHROMIUM=...)")
    # a page on a server of a test's own (tests/classroom/conftest.py app_process) loads the bundle too: a
    # stale one (the sources changed since, e.g. by a rebase) never gets ready, whichever test runs first
    build_bundle()
    if _LAUNCHED:  # another directory's copy of this fixture started it (Playwright's sync API runs once)
        yield _LAUNCHED[0]
        return
    from playwright.sync_api import expect, sync_playwright

    # an assertion on the page waits up to 20 s for it to come true (Playwright's default: 5 s): a model's
    # first load on a machine busy with the whole suite took longer than 5 s (test_model_picker, 6 Dec);
    # a page that is right passes as soon as it is, so this costs a passing test nothing
    expect.set_options(timeout=20_000)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        _LAUNCHED.append(b)
        yield b
        _LAUNCHED.clear()
        _KEPT.clear()
        b.close()


@dataclass
class Watched:
    """A page plus everything that went wrong on it."""

    page: Any
    base: str
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    origins: set[str] = field(default_factory=set)  # host:port of every page it showed

    def expect_console_error(self, fragment: str) -> None:
        """A test that provokes an error on purpose (e.g. a 422 the page shows) names it here."""
        self.expected.append(fragment)

    def unexpected_errors(self) -> list[str]:
        return [e for e in self.errors if not any(f in e for f in self.expected)]

    def goto(self, query: str = "") -> Any:
        response = self.page.goto(self.base + "/" + query)
        self.wait_ready()
        return response

    def wait_ready(self, **attrs: str | int) -> None:
        """Wait until the app has drawn a computed result, with the given data-* values (30 s, Playwright's
        own default: a loaded 2-core machine may take 5 s and more for a page with a 3D view)."""
        sel = '#app[data-ready="true"]' + "".join(f'[data-{k}="{v}"]' for k, v in attrs.items())
        self.page.wait_for_selector(sel, timeout=30_000)

    def text(self, testid: str) -> str:
        text: str = self.page.get_by_test_id(testid).inner_text()
        return text

    def number(self, testid: str) -> float:
        return float(self.text(testid).strip().replace("\u2212", "-"))

    def row(self, i: int, n: int = 5) -> list[float]:
        return [self.number(f"cell-{i}-{j}") for j in range(n)]


def presented_room(page: Any) -> dict[str, Any] | None:
    """The room a page presents ({code, key}), as its session keeps it; None if none."""
    try:
        room = json.loads(page.evaluate("sessionStorage.getItem('a3d.presenter')") or "null")
    except Exception:  # the page is gone or elsewhere: nothing of ours to close
        return None
    return room if isinstance(room, dict) and room.get("code") and room.get("key") else None


def close_room(base: str, room: dict[str, Any] | None) -> None:
    """Close a room as the teacher's Close would: a session's shared server holds at most
    limits.MAX_ROOMS (100) open rooms, and a suite's projector pages open more than that."""
    if room is None:
        return
    headers = {"Authorization": f"Bearer {room['key']}"}
    request = urllib.request.Request(f"{base}/api/rooms/{room['code']}", method="DELETE", headers=headers)
    with contextlib.suppress(urllib.error.URLError, OSError):  # closed already, or its server is gone
        urllib.request.urlopen(request, timeout=5).close()


# Contexts kept for the next test, by their options: a new context costs Chromium a renderer process
# and the page's code compiled again (~0.4 s of CPU a test); a kept one is handed on as a new one would
# be: no cookies, no storage, no listeners or routes of the last test, its page on about:blank.
@dataclass
class _Kept:
    context: Any
    page: Any
    holder: dict[str, Watched]  # "w": the test's Watched, for the guard and listeners made once
    page_listeners: dict[str, list[Any]] = field(default_factory=dict)  # those made once, not a test's
    context_listeners: dict[str, list[Any]] = field(default_factory=dict)


_KEPT: dict[str, list[_Kept]] = {}
_KEEP_AT_MOST = 4  # of one kind: the classroom's tests hold four pages at once
# what Playwright keeps as a child of a page or context that clearing cannot undo: an init script or an
# exposed function (a Disposable each), a DevTools session's changes (a slowed network, a debugger)
_LASTING = {"Disposable", "CDPSession"}


def _kind(options: dict[str, Any]) -> str:
    return json.dumps(options, sort_keys=True, default=str)


def _listeners(emitter: Any) -> dict[str, list[Any]]:
    impl = emitter._impl_obj  # Playwright's own event emitter under the sync API's object
    return {name: list(impl.raw_listeners(name)) for name in impl.event_names()}


def _added_listeners(emitter: Any, before: dict[str, list[Any]]) -> list[tuple[str, Any]]:
    return [(name, f) for name, fs in _listeners(emitter).items() for f in fs if f not in before.get(name, [])]


def _new_kept(browser: Any, options: dict[str, Any]) -> _Kept:
    """A new context and page, guarded and listened to once for whichever test holds them."""
    context = browser.new_context(**options)
    page = context.new_page()
    holder: dict[str, Watched] = {}

    def guard(route: Any) -> None:
        url = urlparse(route.request.url)
        if url.scheme in LOCAL_SCHEMES or url.hostname == "127.0.0.1":
            route.continue_()
        else:
            holder["w"].outside.append(route.request.url)
            route.abort()

    def navigated(frame: Any) -> None:
        url = urlparse(frame.url)
        if frame.parent_frame is None and url.scheme in {"http", "https"}:
            holder["w"].origins.add(url.netloc)

    context.route("**/*", guard)
    page.on("console", lambda m: holder["w"].errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: holder["w"].errors.append(f"pageerror: {e}"))
    page.on(
        "requestfailed",
        lambda r: holder["w"].outside.append(f"failed: {r.url}") if "127.0.0.1" not in r.url else None,
    )
    page.on("framenavigated", navigated)
    return _Kept(context, page, holder, _listeners(page), _listeners(context))


def _hand_on(kept: _Kept, options: dict[str, Any]) -> bool:
    """Make `kept` as a new context would be, for the next test; False where it cannot be (the test
    closed its page, opened others, went to a second server, added a listener to the context, an init
    script or an exposed function, or left a DevTools session attached)."""
    context, page, w = kept.context, kept.page, kept.holder["w"]
    if page.is_closed() or len(context.pages) != 1 or len(w.origins) > 1:
        return False
    if _added_listeners(context, kept.context_listeners):
        return False
    if any(o._type in _LASTING for x in (page, context) for o in x._impl_obj._objects.values()):
        return False
    for name, f in _added_listeners(page, kept.page_listeners):
        page._impl_obj.remove_listener(name, f)
    page.unroute_all(behavior="ignoreErrors")
    page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch {} }")
    page.goto("about:blank")
    context.clear_cookies()
    context.clear_permissions()
    viewport = options["viewport"]
    if page.viewport_size != viewport:
        page.set_viewport_size(viewport)
    motion, scheme = options.get("reduced_motion", "no-preference"), options.get("color_scheme", "light")
    page.emulate_media(media="null", color_scheme=scheme, reduced_motion=motion)
    page.set_default_timeout(30_000)
    page.set_default_navigation_timeout(30_000)
    return True


@contextmanager
def watched_page(browser: Any, base: str, **options: Any) -> Iterator[Watched]:
    """A fresh browser context on `base`, guarded like every test page; `options` for the context
    (e.g. locale="es-ES": the browser's language, as navigator.languages and Accept-Language say).
    The context may be one an earlier test used, handed on clean (_hand_on)."""
    # reduced motion: transitions jump to their end, which keeps the suite fast (the page honours it)
    options = {"viewport": {"width": 1280, "height": 800}, "reduced_motion": "reduce", **options}
    kind = _kind(options)
    shelf = _KEPT.setdefault(kind, [])
    kept = shelf.pop() if shelf else _new_kept(browser, options)
    page = kept.page
    w = kept.holder["w"] = Watched(page=page, base=base)
    room, handed_on = None, False
    try:
        yield w
        room = presented_room(page)
        if len(shelf) < _KEEP_AT_MOST:
            try:
                handed_on = _hand_on(kept, options)
            except Exception:  # a page that crashed or hangs: closed, as any other
                handed_on = False
    finally:
        if handed_on:
            shelf.append(kept)
        else:
            room = room or presented_room(page)
            kept.context.close()
        close_room(base, room)
    assert not w.outside, f"requests left 127.0.0.1: {w.outside}"
    assert not w.unexpected_errors(), f"errors on the page: {w.unexpected_errors()}"


@pytest.fixture
def watched(browser: Any, server: str) -> Iterator[Watched]:
    with watched_page(browser, server) as w:
        yield w
