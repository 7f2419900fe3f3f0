"""Write mode and chapters 10–11 (issue 21, the page's part) in real Chromium against a real server.

One test writes 16 tokens greedily in the page and checks, for every written token, the ten
candidates, the KV cache's rows and the new token's attention row against the API's own answer
for the same request; the bars' chances follow the temperature knob (recomputed here from the
API's logits). Another follows a writing from the writer's views (the classroom's seam); others run
the NumPy panels' programs against the page's numbers and check that a step asks before it tells.
Every step of chapters 10 and 11 on the first screen and on a phone: test_layout (every chapter).
"""

from __future__ import annotations

import json
import math
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched, watched_page
from tests.browser.helpers import fewest_labels, labels_shown, next_frames, run_python, watch_labels

pytestmark = pytest.mark.browser

PROMPT = "The capital of France is"
N = 16
READY = '#app[data-ready="true"][data-chapter="{chapter}"]'

# every written token as the page shows it: candidates (id, p, chance), cache rows and their weights
SHOWN = """() => {
  const panel = document.getElementById('chapter-panel');
  const cands = [...panel.querySelectorAll('[data-testid^="write-cand-"]')].map((li) => ({
    id: Number(li.dataset.id), p: Number(li.dataset.p), chance: Number(li.dataset.chance) }));
  const rows = [...panel.querySelectorAll('[data-testid="write-cache"] li')];
  return { at: Number(panel.dataset.at), kv: Number(panel.dataset.kvLen), cands,
           rows: rows.map((li) => li.querySelector('.wr-row-tok').textContent),
           weights: rows.map((li) => Number(li.dataset.w)) };
}"""


def _api(server: str) -> Any:
    """The same request the page made, answered as one JSON object (Accept: application/json)."""
    body = {
        "model": "smollm2-135m",
        "prompt": PROMPT,
        "max_new_tokens": N,
        "temperature": 0,
        "seed": 7,
        "layer": 5,
        "head": 0,
    }
    req = urllib.request.Request(
        server + "/api/generate",
        json.dumps(body).encode(),
        {"content-type": "application/json", "accept": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def _show(t: str) -> str:
    return t.replace("\n", "↵").replace("\t", "⇥") or "∅"


def test_writing_16_tokens_shows_the_apis_candidates_cache_rows_and_attention(browser: Any, server: str) -> None:
    with watched_page(browser, server) as w:
        w.page.goto(f"{server}/?chapter=writing")
        # a fresh server unpacks the decoder's weights at its first use (once per test session)
        w.page.wait_for_selector(READY.format(chapter="writing"), timeout=180_000)
        w.page.get_by_test_id("write-count").fill(str(N))
        w.page.get_by_test_id("write-go").click()
        w.page.wait_for_selector(f'#chapter-panel[data-written="{N}"][data-writing="false"]', timeout=120_000)
        w.page.wait_for_selector(READY.format(chapter="writing"))
        api = _api(server)
        assert api["written"] == N and len(api["tokens"]) == N
        ids = [
            int(b)
            for b in w.page.eval_on_selector_all('[data-testid^="write-token-"]', "(bs) => bs.map((b) => b.dataset.id)")
        ]
        assert ids == [t["id"] for t in api["tokens"]]
        for i, t in enumerate(api["tokens"]):
            w.page.get_by_test_id(f"write-token-{i}").click()
            w.page.wait_for_selector(f'#chapter-panel[data-at="{i}"]')
            shown = w.page.evaluate(SHOWN)
            assert [c["id"] for c in shown["cands"]] == [c["id"] for c in t["candidates"]], i
            assert all(
                math.isclose(a["p"], c["p"], abs_tol=1e-6) for a, c in zip(shown["cands"], t["candidates"], strict=True)
            )
            assert [c["chance"] for c in shown["cands"]] == [1] + [0] * 9  # greedy: the likeliest
            assert shown["kv"] == t["kv_len"] == len(api["prompt_tokens"]) + i
            cache = [*api["prompt_tokens"], *(x["token"] for x in api["tokens"][:i])]
            assert shown["rows"] == [_show(x) for x in cache]
            assert all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(shown["weights"], t["attention"], strict=True))
        # the temperature knob redraws the chances: softmax of the ten logits at T = 1
        w.page.get_by_test_id("write-temp").fill("1")
        logits = [c["logit"] for c in api["tokens"][-1]["candidates"]]
        top = max(logits)
        e = [math.exp(x - top) for x in logits]
        want = [x / sum(e) for x in e]
        got = [c["chance"] for c in w.page.evaluate(SHOWN)["cands"]]
        assert all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(got, want, strict=True)), (got, want)
        # the NumPy panel's program computes the same chances
        w.page.get_by_test_id("write-temp").dispatch_event("change")
        w.page.wait_for_selector('#app[data-ready="true"]')
        w.page.locator('#step-list button[data-step="candidates"]').click()
        w.page.wait_for_selector('#app[data-ready="true"][data-step="candidates"]')
        ran = run_python(w.text("numpy-code"))
        assert all(math.isclose(a, b, abs_tol=1e-5) for a, b in zip(ran, want, strict=True))
        # the 3D view draws the cache: one key row and one value row per cached token (instanced)
        boxes = w.page.evaluate("document.querySelectorAll('#chapter-stage .wr-label').length")
        assert boxes == 2  # 'keys' and 'values'
        drawn = w.page.evaluate("document.querySelector('#chapter-stage').dataset.cacheBoxes")
        assert drawn == f"{shown['kv']}×1", drawn


# every view the page tells (pageview.js: "attention:view", detail = its URL parameters)
RECORD_VIEWS = """() => { window.__views = [];
  document.addEventListener('attention:view', (e) => window.__views.push(e.detail)); }"""
APPLY = """async (s) => { const d = { ...s }; document.dispatchEvent(new CustomEvent('attention:apply', { detail: d }));
  await d.done; }"""
SHOWN_IDS = "(bs) => bs.map((b) => b.dataset.id)"


def test_a_following_page_draws_each_token_from_the_view_without_asking(browser: Any, server: str) -> None:
    """The classroom's seam (write/live.js): the writing page puts the tokens written so far in its
    view (the chapter parameter `live`) on every streamed token; a page given those views draws each
    token as it comes without asking the server, and loads the whole answer once the writing ends.
    The writer keeps its streamed answer: stepping through it asks the server nothing."""
    n = 6
    with watched_page(browser, server) as writer, watched_page(browser, server) as follower:
        writer.page.goto(f"{server}/?chapter=writing")
        writer.page.wait_for_selector(READY.format(chapter="writing"), timeout=180_000)
        writer.page.evaluate(RECORD_VIEWS)
        written: list[str] = []
        writer.page.on("request", lambda r: written.append(r.method) if "/api/generate" in r.url else None)
        writer.page.get_by_test_id("write-count").fill(str(n))
        writer.page.get_by_test_id("write-go").click()
        writer.page.wait_for_selector(f'#chapter-panel[data-written="{n}"][data-writing="false"]', timeout=120_000)
        writer.page.wait_for_selector(READY.format(chapter="writing"))
        ids = writer.page.eval_on_selector_all('[data-testid^="write-token-"]', SHOWN_IDS)
        writer.page.get_by_test_id("write-token-1").click()
        writer.page.wait_for_selector('#chapter-panel[data-at="1"]')
        writer.page.wait_for_selector(READY.format(chapter="writing"))
        assert written == ["POST"], written  # the stream; its answer is kept, the step costs nothing

        views = writer.page.evaluate("() => window.__views")
        live = [v for v in views if v.get("live")]
        counts = [len(json.loads(v["live"])["t"]) for v in live]
        assert counts and counts == sorted(counts) and counts[-1] == n, counts
        final = views[-1]
        assert final["n"] == str(n) and final["at"] == "1" and not final.get("live"), final

        follower.page.goto(f"{server}/?chapter=writing")
        follower.page.wait_for_selector(READY.format(chapter="writing"), timeout=60_000)
        asked: list[str] = []
        follower.page.on("request", lambda r: asked.append(r.method) if "/api/generate" in r.url else None)
        for view, count in zip(live, counts, strict=True):
            follower.page.evaluate(APPLY, view)
            panel = follower.page.locator(f'#chapter-panel[data-following="true"][data-written="{count}"]')
            expect(panel).to_have_attribute("data-at", str(count - 1))
            shown = follower.page.eval_on_selector_all('[data-testid^="write-token-"]', SHOWN_IDS)
            assert shown == ids[:count], (shown, ids)
            so_far = f"writing: {count} token{'s' * (count != 1)} so far"
            expect(follower.page.get_by_test_id("write-status")).to_contain_text(so_far)
            # the model's numbers come when the writing ends: no candidates while following
            assert follower.page.locator('[data-testid^="write-cand-"]').count() == 0
        assert asked == [], asked
        # the writing ended: the follower loads the written tokens once, the same tokens
        follower.page.evaluate(APPLY, final)
        follower.page.wait_for_selector(f'#chapter-panel[data-written="{n}"][data-at="1"]:not([data-following])')
        follower.page.wait_for_selector(READY.format(chapter="writing"))
        assert follower.page.eval_on_selector_all('[data-testid^="write-token-"]', SHOWN_IDS) == ids
        assert follower.page.locator('[data-testid^="write-cand-"]').count() == 10
        assert asked == ["POST"], asked


def test_the_numpy_programs_of_chapters_10_and_11_agree_with_the_page(browser: Any, server: str) -> None:
    """Their steps fit the first screen and a phone in test_layout (every chapter of the registry)."""
    with watched_page(browser, server) as w:
        w.page.set_viewport_size({"width": 1280, "height": 720})
        # the size step's program and table: 2 × 30 layers × 3 KV heads × 64 × bytes × tokens
        w.page.goto(f"{server}/?chapter=writing&step=size")
        w.page.wait_for_selector(READY.format(chapter="writing") + '[data-step="size"]', timeout=30_000)
        ran = run_python(w.text("numpy-code"))
        for tokens in (1024, 8192):
            for name, size in (("float32", 4), ("float16", 2)):
                shown = int(w.page.get_by_test_id(f"write-size-{tokens}-{size}").get_attribute("data-bytes") or 0)
                assert shown == ran[f"{name} {tokens}"] == 2 * 30 * 3 * 64 * size * tokens
        # the GQA step's NumPy program reads the model file itself and agrees with the page
        w.page.goto(f"{server}/?chapter=today&step=gqa")
        w.page.wait_for_selector(READY.format(chapter="today") + '[data-step="gqa"]', timeout=30_000)
        ran = run_python(w.text("numpy-code"))
        assert ran["heads"] == 9 and ran["kv_heads"] == 3 and ran["group"] == 3
        assert ran["bytes_gqa"] == int(w.text("today-gqa-bytes").replace(",", "")) == 2 * 30 * 3 * 64 * 4
        assert int(w.text("today-mha-bytes").replace(",", "")) == 3 * ran["bytes_gqa"] == ran["bytes_if_9"]
        # the distance step: the model's own q·k, moved together, does not change (RoPE); the pair's scores do
        shown = watch_labels(w)
        w.page.locator('#step-list button[data-step="distance"]').click()
        w.page.wait_for_selector('#app[data-ready="true"][data-step="distance"]')
        next_frames(w.page, 2)
        # the GQA step's four names, then the distance step's two: never a painted moment with fewer
        assert (shown, labels_shown(w), fewest_labels(w)) == (4, 2, 2)
        assert w.number("today-shift-spread") < 1e-3
        ran = run_python(w.text("numpy-code"))
        assert ran["2,0"] == ran["5,3"] == ran["9,7"] != ran["5,0"]
        assert f"{ran['5,3']:.4f}" == w.text("today-score-2").replace("\u2212", "-")


# per step: what the words used to give away before the guess, and the answer's words after it
HELD_BACK = {
    "writing": {
        "write": ("once per new token", "once per new token"),
        "causal": ("exist yet", "don't exist yet"),
        "cache": ("never change", "never change once computed"),
        "size": ("MB", "MB at 4 bytes a number"),
        "candidates": ("always takes the top", "always takes the top candidate"),
    },
    "today": {
        "rope": ("turns each pair", "turns each pair like a clock hand"),
        "distance": ("only through A − B", "only through A − B"),
        "gqa": ("share one set", "0–2, 3–5, 6–8 each share one set of keys and values"),
        "sink": ("token 0", "the attention sink"),
    },
}


@pytest.mark.parametrize("chapter", HELD_BACK)
def test_each_step_asks_before_it_tells(watched: Watched, chapter: str) -> None:
    """Predict, then reveal: a step's title and words leave its Predict answer out; a wrong guess is
    told the right option and why, a right one "Right!" and why. The chapter is opened at its first step
    and walked by its step list, as a learner does (the written tokens are kept: one writing, not five)."""
    w = watched
    ask = "write-ask" if chapter == "writing" else "today-ask"
    query = f"&n={N}&at=3" if chapter == "writing" else ""
    for i, (step, (before, after)) in enumerate(HELD_BACK[chapter].items()):
        if i == 0:
            w.page.goto(f"{w.base}/?chapter={chapter}&step={step}{query}")
        else:
            w.page.locator(f'#step-list button[data-step="{step}"]').click()
        w.page.wait_for_selector(READY.format(chapter=chapter) + f'[data-step="{step}"]', timeout=60_000)
        words = w.text("chapter-title") + " " + w.text("chapter-text")
        assert before not in words, f"{chapter}/{step} gives its answer away: {words}"
        options = w.page.locator(f'[data-testid^="{ask}-"]:is(button)')
        n = options.count()
        assert n >= 2
        result = w.page.get_by_test_id(f"{ask}-result")
        assert result.inner_text() == ""
        # the right option is the one whose text the verdict names after a wrong guess
        options.nth(0).click()
        told = result.inner_text()
        if told.startswith("Right!"):
            right = 0
        else:
            assert told.startswith("Not quite: it is “"), told
            named = told.split("“", 1)[1].split("”", 1)[0]
            right = [options.nth(i).inner_text() for i in range(n)].index(named)
            assert right != 0
        assert after in told, f"{chapter}/{step}: {told}"
        options.nth(right).click()
        told = result.inner_text()
        assert told.startswith("Right! ") and after in told, told


def test_the_cache_sizes_wait_for_the_size_steps_guess(watched: Watched) -> None:
    """The table of the cache's sizes would answer the size step's question (8,192 tokens: 377.5 MB):
    before that step and on it its cells read "? B", and after a guess (or on a later step) the numbers.
    Opened at the first step, then walked by the step list; then the size step opened by its URL."""
    w = watched
    cell = "write-size-8192-4"
    w.page.goto(f"{w.base}/?chapter=writing&step=write&n={N}&at=3")
    for step, shown in (("write", "? B"), ("size", "? B"), ("candidates", "377,487,360 B (377.5 MB)")):
        w.page.locator(f'#step-list button[data-step="{step}"]').click()
        w.page.wait_for_selector(READY.format(chapter="writing") + f'[data-step="{step}"]', timeout=60_000)
        assert w.text(cell) == shown, step
        assert w.page.get_by_test_id(cell).get_attribute("data-bytes") == str(2 * 30 * 3 * 64 * 4 * 8192)
    w.page.goto(f"{w.base}/?chapter=writing&step=size&n={N}&at=3")
    w.page.wait_for_selector(READY.format(chapter="writing") + '[data-step="size"]', timeout=60_000)
    w.page.get_by_test_id("write-ask-0").click()  # "4 MB": wrong, and told why
    assert w.text(cell) == "377,487,360 B (377.5 MB)"
    assert "377.5 MB" in w.text("write-ask-result")
