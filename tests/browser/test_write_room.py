"""The Write chapter as a class meets it, in Chromium against a real server (issue 38):

- walked into with the clicker on the projector (Present, a phone following) it shows something true at
  once: before anything is written, the prompt the model has read (its tokens, one cache row each) and
  the token it would write next (its query's attention over the prompt, the ten candidates), equal to
  the API's answer, on the projector and the phone; every step's words speak of what is drawn (the
  candidates step of bars that are there);
- the written token shown stays in sight in the text's box (it sat under the candidates' bars);
- writing in a room: the projector's page asks the decoder's facts at most once and the model once (its
  stream), and sends the room each token as it comes, in order; a phone ends with the same tokens.
"""

from __future__ import annotations

import json
import math
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.conftest import Watched, watched_page
from tests.browser.test_classroom import follower, presenter
from tests.browser.test_write import SHOWN
from tests.classroom.conftest import app_process

pytestmark = pytest.mark.browser

READY = '#app[data-ready="true"][data-chapter="writing"]'


@pytest.fixture(scope="module")
def write_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with app_process(tmp_path_factory.mktemp("write"), ATTENTION_VOTES_PER_ADDRESS="0") as (base, _):
        yield base


@pytest.fixture
def page(browser: Any, write_server: str) -> Iterator[Watched]:
    with watched_page(browser, write_server) as w:
        yield w


def api(server: str, prompt: str, n: int) -> Any:
    """The page's own request (write/params.js requestOf, the chapter's defaults), as one JSON answer."""
    body = {"model": "smollm2-135m", "prompt": prompt, "max_new_tokens": n, "temperature": 0, "top_k": 0,
            "top_p": 1, "seed": 7, "layer": 5, "head": 0}  # fmt: skip
    request = urllib.request.Request(
        server + "/api/generate",
        json.dumps(body).encode(),
        {"content-type": "application/json", "accept": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=180) as r:
        return json.loads(r.read())


def test_the_class_walks_into_write_and_follows_the_writing(browser: Any, write_server: str) -> None:
    """The projector (Present) walks from the chapter before into Write with the clicker; each step is
    checked on the projector, the first also on a phone that joins there; then the projector writes."""
    with watched_page(browser, write_server) as teacher, watched_page(browser, write_server) as phone:
        w = teacher
        w.page.set_viewport_size({"width": 1280, "height": 720})
        code = presenter(w, query="chapter=block")
        w.page.wait_for_selector('#app[data-ready="true"][data-chapter="block"]', timeout=60_000)
        for _ in range(12):  # the clicker's PageDown, into Write
            if w.page.locator('#app[data-chapter="writing"]').count():
                break
            w.page.keyboard.press("PageDown")
            w.page.wait_for_selector('#app[data-ready="true"]', timeout=180_000)
        w.page.wait_for_selector(READY + '[data-step="write"]', timeout=180_000)

        # before anything is written: the prompt the model has read, and the token it would write next
        first = api(w.base, "The capital of France is", 1)
        nxt, prompt = first["tokens"][0], first["prompt_tokens"]
        marked = [t.replace("\n", "↵") for t in prompt]
        read = w.page.locator('[data-testid="write-prompt-text"] .wr-ptok').all_inner_texts()
        assert read == marked and len(prompt) == 5  # its tokens, one mark each
        shown = w.page.evaluate(SHOWN)
        assert shown["at"] == -1 and shown["kv"] == nxt["kv_len"] == 5  # nothing written; 5 cache rows
        assert shown["rows"] == prompt
        assert all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(shown["weights"], nxt["attention"], strict=True))
        assert [c["id"] for c in shown["cands"]] == [c["id"] for c in nxt["candidates"]]
        assert w.page.get_by_test_id("write-token-0").count() == 0
        bars = w.page.locator("[data-testid^=write-cand-] .wr-bar-p").evaluate_all(
            "(bs) => bs.map((b) => b.offsetWidth)"
        )
        assert len(bars) == 10 and bars[0] > 0  # drawn, not only described
        words = w.text("chapter-text")
        assert "It has read the prompt: 5 tokens" in words and "Nothing is written yet." in words
        phone.page.set_viewport_size({"width": 390, "height": 844})
        follower(phone, code)  # a phone that joins now: the same first screen
        phone.page.wait_for_selector(READY + '[data-step="write"]', timeout=180_000)
        assert phone.page.locator('[data-testid="write-prompt-text"] .wr-ptok').all_inner_texts() == marked
        assert "It has read the prompt: 5 tokens" in phone.text("chapter-text")

        # every step's words speak of what is drawn
        w.page.keyboard.press("PageDown")
        w.page.wait_for_selector(READY + '[data-step="causal"]')
        assert "the query of its last token (“ is”, orange) reaches back to the keys of all 5 tokens" in w.text(
            "chapter-text"
        )
        for step in ("cache", "size", "candidates"):
            w.page.keyboard.press("PageDown")
            w.page.wait_for_selector(READY + f'[data-step="{step}"]')
        assert w.text("chapter-text").startswith("The grey bar is the model's probability")
        assert w.page.locator("[data-testid^=write-cand-] .wr-bar-p").count() == 10  # the bars it speaks of
        assert w.text("write-kv-len") == "5"  # the numbers too: of the token it would write next
        p_next = next(c["p"] for c in nxt["candidates"] if c["id"] == nxt["id"])
        assert w.text("write-chosen-p") == f"{p_next:.3f}"

        # writing in the room: the decoder's facts asked at most once, the model once (its stream), each
        # token sent to the room as it comes, in order; the phone ends with the same tokens
        asked: list[str] = []
        w.page.on("request", lambda r: asked.append(r.url.split("/api/")[1]) if "/api/" in r.url else None)
        record = """() => { window.__sent = []; document.addEventListener('attention:view', (e) =>
          window.__sent.push(e.detail.live ? JSON.parse(e.detail.live).t.length : -1)); }"""
        w.page.evaluate(record)
        words_written = "A green frog sat on the"
        w.page.evaluate(
            """(prompt) => { const form = document.querySelector('[data-testid=write-form]');
              form.querySelector('[data-testid=write-prompt]').value = prompt;
              form.querySelector('[data-testid=write-count]').value = '10'; form.requestSubmit(); }""",
            words_written,
        )
        w.page.wait_for_selector('#chapter-panel[data-writing="false"][data-written="10"]', timeout=180_000)
        w.wait_ready()
        generate = [a for a in asked if a.startswith("generate")]
        models = [a for a in asked if a.startswith("models")]
        assert len(generate) == 1 and len(models) <= 1, asked  # its stream, and the decoder's facts at most once
        states = w.page.evaluate("window.__sent")
        live = [n for n in states if n > 0]
        assert live == sorted(live) and live[-1] == 10 and live[0] >= 1, states  # each token, in order
        assert states[-1] == -1  # then the writing's end: the phones load the text once
        phone.page.wait_for_selector('#chapter-panel[data-written="10"]:not([data-following])', timeout=60_000)
        ids = "(bs) => bs.map((b) => b.dataset.id)"
        want = [t["id"] for t in api(write_server, words_written, 10)["tokens"]]
        assert [int(x) for x in phone.page.eval_on_selector_all('[data-testid^="write-token-"]', ids)] == want
        assert [int(x) for x in w.page.eval_on_selector_all('[data-testid^="write-token-"]', ids)] == want


def test_the_shown_token_stays_in_sight(page: Watched) -> None:
    w = page
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.page.goto(f"{w.base}/?chapter=writing&prompt=Once%20upon%20a%20time&n=40&step=candidates")
    w.page.wait_for_selector('#chapter-panel[data-written="40"]', timeout=180_000)
    w.wait_ready()
    inside = """() => { const box = document.querySelector('[data-testid=write-text]').getBoundingClientRect();
      const tok = document.querySelector('.wr-tok[aria-pressed=true]').getBoundingClientRect();
      const bars = document.querySelector('[data-testid=write-cands]').getBoundingClientRect();
      const inBox = tok.top >= box.top - 0.5 && tok.bottom <= box.bottom + 0.5;
      return [inBox, tok.bottom <= bars.top + 0.5, box.bottom - box.top]; }"""
    for at in (39, 0, 25):
        if at != 39:
            w.page.get_by_test_id(f"write-token-{at}").click(force=True)  # as a click on the token does
            w.page.wait_for_selector(f'#chapter-panel[data-at="{at}"]')
        in_box, above_bars, height = w.page.evaluate(inside)
        assert in_box and above_bars, (at, height)
