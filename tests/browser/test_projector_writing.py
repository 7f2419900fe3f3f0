"""A class follows the decoder writing (chapter 10), token by token.

The presenter writes in the projector view; a phone (390×844) that follows sees the text grow one
token at a time (the presenter's page puts the tokens written so far in the room's state: no model
runs for a follower while the teacher writes) and ends with exactly the presenter's tokens; a laptop
that joins half-way sees the tokens written so far at once. The presenter's download is slowed
(Chromium's network emulation) so the writing takes a while, as it may on a real class's server,
and the presenter's page is held in the debugger while the late joiner loads, so the joiner surely
comes in mid-way however slowly its page loads.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from tests.browser.conftest import Watched, watched_page
from tests.browser.test_projector import TOKEN

pytestmark = pytest.mark.browser

N = 12  # tokens the presenter writes
READY = '#app[data-ready="true"][data-chapter="writing"]'

# every change of the follower's written text: [count, the ids shown, following (no model) or not, candidates shown]
RECORD = """() => {
  window.__seen = [];
  const panel = document.getElementById('chapter-panel');
  const note = () => {
    const ids = [...panel.querySelectorAll('[data-testid^="write-token-"]')].map((b) => Number(b.dataset.id));
    const cands = panel.querySelectorAll('[data-testid^="write-cand-"]').length;
    window.__seen.push([Number(panel.dataset.written || 0), ids, panel.dataset.following === 'true', cands]);
  };
  new MutationObserver(note).observe(panel, { attributes: true, attributeFilter: ['data-written', 'data-following'] });
  note();
}"""

SHOWN_IDS = """() => [...document.querySelectorAll('#chapter-panel [data-testid^="write-token-"]')]
  .map((b) => Number(b.dataset.id))"""


def warm(server: str) -> None:
    """One token written through the API: the decoder's weights are loaded before the timed part."""
    body = {"model": "smollm2-135m", "prompt": "Hello", "max_new_tokens": 1, "temperature": 0, "seed": 1}
    req = urllib.request.Request(
        server + "/api/generate",
        json.dumps(body).encode(),
        {"content-type": "application/json", "accept": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=180) as r:
        assert json.loads(r.read())["written"] == 1


def settled_live_count(server: str, code: str) -> int:
    """How many written tokens the room's state holds, once it has not changed for a second."""
    last, since = -1, time.monotonic()
    deadline = since + 30
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{server}/api/rooms/{code}", timeout=30) as r:
            state = json.loads(r.read())["state"] or {}
        count = len(json.loads(state["live"])["t"]) if state.get("live") else 0
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since >= 1:
            return count
        time.sleep(0.1)
    raise AssertionError(f"the room's tokens kept changing for 30 s (last {last})")


def throttle(cdp: Any, bytes_per_s: int) -> None:
    """The presenter's downloads at `bytes_per_s` (-1: as fast as they come); uploads are not slowed."""
    conditions = {"offline": False, "latency": 0, "downloadThroughput": bytes_per_s, "uploadThroughput": -1}
    cdp.send("Network.emulateNetworkConditions", conditions)


@pytest.fixture
def room(browser: Any, server: str) -> Iterator[tuple[Watched, Watched, str]]:
    """A presenter in the Write chapter's projector view, and a phone following its room."""
    with ExitStack() as stack:
        teacher = stack.enter_context(watched_page(browser, server))
        teacher.page.goto(f"{server}/?token={TOKEN}&chapter=writing&n=0&present=1")
        teacher.page.wait_for_selector(READY, timeout=180_000)  # a fresh data folder converts the decoder first
        warm(server)
        code = teacher.text("join-code")
        phone = stack.enter_context(watched_page(browser, server))
        phone.page.set_viewport_size({"width": 390, "height": 844})
        phone.page.goto(f"{server}/?room={code}")
        phone.page.wait_for_selector('[data-testid="follow-bar"][data-status="live"]')
        phone.page.wait_for_selector(READY, timeout=60_000)
        yield teacher, phone, code


def test_followers_see_each_written_token_and_a_late_joiner_the_tokens_so_far(
    browser: Any, server: str, room: tuple[Watched, Watched, str]
) -> None:
    teacher, phone, code = room
    phone.page.evaluate(RECORD)
    # the presenter's download slowed to ~2 tokens a second (each streamed line is ~2.5 kB)
    cdp = teacher.page.context.new_cdp_session(teacher.page)
    cdp.send("Network.enable")
    cdp.send("Debugger.enable")
    throttle(cdp, 5000)  # Chromium sets a request's pace when it starts
    # the projector view may have folded the Write form into its Controls tab
    if not teacher.page.get_by_test_id("write-go").is_visible():
        teacher.page.locator('[data-testid="projector-tabs"] button', has_text="Controls").click()
    teacher.page.get_by_test_id("write-count").fill(str(N))
    teacher.page.get_by_test_id("write-go").click()
    teacher.page.wait_for_selector('#chapter-panel[data-writing="true"]')
    teacher.page.wait_for_function("() => Number(document.getElementById('chapter-panel').dataset.written) >= 3")
    # the presenter's page stops at its next line of script (at the latest, the stream's next token);
    # the room then holds the tokens of its last PUT
    cdp.send("Debugger.pause")
    in_room = settled_live_count(server, code)
    assert 1 <= in_room < N, in_room

    # a laptop joins half-way: it shows the tokens written so far, at once, without the model
    with watched_page(browser, server) as late:
        late.page.goto(f"{server}/?room={code}")
        late.page.wait_for_selector('[data-testid="follow-bar"][data-status="live"]')
        late.page.wait_for_selector('#chapter-panel[data-following="true"]', timeout=30_000)
        so_far = int(late.page.get_attribute("#chapter-panel", "data-written") or 0)
        late_ids = late.page.evaluate(SHOWN_IDS)
        assert so_far == in_room and len(late_ids) == so_far, (so_far, in_room, late_ids)
        cdp.send("Debugger.resume")

        teacher.page.wait_for_selector(f'#chapter-panel[data-written="{N}"][data-writing="false"]', timeout=120_000)
        throttle(cdp, -1)
        written = teacher.page.evaluate(SHOWN_IDS)
        assert len(written) == N
        assert late_ids == written[:so_far]
        # every follower ends with exactly the presenter's tokens (then with the model's numbers: one request each)
        for w in (phone, late):
            w.page.wait_for_selector(f'#chapter-panel[data-written="{N}"]:not([data-following])', timeout=120_000)
            assert w.page.evaluate(SHOWN_IDS) == written

    seen: list[tuple[int, list[int], bool, int]] = phone.page.evaluate("() => window.__seen")
    live_counts = sorted({count for count, _, following, _ in seen if following})
    # the phone saw the text grow while the presenter wrote, not only the end
    assert len([c for c in live_counts if 0 < c < N]) >= 3, live_counts
    for count, ids, following, cands in seen:
        assert len(ids) == count and ids == written[:count], (count, ids, written)
        assert not (following and cands), "a following phone shows the model's candidates only once it has its answer"
    assert phone.page.locator('[data-testid^="write-cand-"]').count() == 10  # its own answer's ten candidates


def test_a_projector_reloaded_mid_writing_lets_the_class_stop_waiting(room: tuple[Watched, Watched, str]) -> None:
    teacher, phone, _ = room
    cdp = teacher.page.context.new_cdp_session(teacher.page)
    cdp.send("Network.enable")
    throttle(cdp, 5000)
    if not teacher.page.get_by_test_id("write-go").is_visible():
        teacher.page.locator('[data-testid="projector-tabs"] button', has_text="Controls").click()
    teacher.page.get_by_test_id("write-count").fill(str(N))
    teacher.page.get_by_test_id("write-go").click()
    phone.page.wait_for_selector('#chapter-panel[data-following="true"]', timeout=60_000)
    # the projector's tab reloads (a bare /?present=1 takes its room back): that writing is over
    throttle(cdp, -1)
    teacher.page.goto(teacher.base + "/?present=1")
    teacher.page.wait_for_selector(READY, timeout=60_000)
    teacher.page.wait_for_selector('[data-testid="join-code"]')
    assert teacher.page.get_attribute("#chapter-panel", "data-following") is None
    phone.page.wait_for_selector("#chapter-panel:not([data-following])", timeout=30_000)
    assert "writing" not in phone.text("write-status")
