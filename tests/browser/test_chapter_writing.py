"""Chapter writing in headless Chromium: the decoder writes 16 tokens in the page (streamed), and for
each the candidates, the cache's rows and the query's weights are the API's; guess first, the bars
after; the knobs redraw the bars; the NumPy panel's numbers."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

import tests.model.llama_fixtures  # noqa: F401 (the converted decoder is cached across runs; the server inherits it)
from tests.browser.chapters import VIEWPORTS, fits, open_at_step
from tests.browser.conftest import Watched
from tests.browser.helpers import f3, run_python

pytestmark = pytest.mark.browser


def generate(base: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(
        base + "/api/generate",
        json.dumps({"model": "smollm2-135m", "max_new_tokens": 16, **body}).encode(),
        {"content-type": "application/json", "accept": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def shown(t: str) -> str:
    return json.dumps(t) if t.strip() == "" else t


def raw(w: Watched, testid: str) -> str:
    """An element's text as the page holds it (inner_text would trim a token's leading space)."""
    text: str = w.page.get_by_test_id(testid).text_content()
    return text


def check_token(w: Watched, api: Any, i: int) -> None:
    """The page at written token i: its candidates, its cache rows and its weights are the API's."""
    w.page.get_by_test_id("write-step").evaluate(
        "(e, i) => { e.value = String(i); e.dispatchEvent(new Event('input')); }", i
    )
    line = api["tokens"][i]
    for j, c in enumerate(line["candidates"]):
        assert raw(w, f"write-cand-{j}-token") == shown(c["token"]), (i, j)
        assert w.text(f"write-cand-{j}-p") == f3(c["p"]), (i, j)
    cached = api["prompt_tokens"] + [t["token"] for t in api["tokens"][:i]]
    assert len(cached) == line["kv_len"]
    rows = w.page.locator("[data-testid=write-cache] tr[data-testid^=write-row-]")
    assert rows.count() == line["kv_len"], i
    for j, tok in enumerate(cached):
        assert raw(w, f"write-row-{j}-token") == shown(tok), (i, j)
        assert w.text(f"write-row-{j}-weight") == f3(line["attention"][j]), (i, j)


def test_write_sixteen_tokens_in_the_page(watched: Watched) -> None:
    w = watched
    open_at_step(w, "chapter=writing&step=cache", (1280, 720), "cache")
    prompt = "Once upon a time, a small robot"
    w.page.get_by_test_id("write-prompt").fill(prompt)
    w.page.get_by_test_id("write-button").click()
    w.page.wait_for_selector('#app[data-written="16"]', timeout=180_000)
    api = generate(w.base, {"prompt": prompt, "layer": 29, "head": 0})
    assert raw(w, "write-text") == "".join(api["prompt_tokens"]) + "".join(t["token"] for t in api["tokens"])
    for i in range(16):
        check_token(w, api, i)
    # the temperature knob redraws the bars from the same candidates: greedy draws the first for sure
    assert w.text("write-cand-0-draw") == "1.000"
    w.page.get_by_test_id("write-temperature").evaluate("e => { e.value = '1'; e.dispatchEvent(new Event('input')); }")
    assert w.text("write-cand-0-draw") != "1.000" and float(w.text("write-cand-1-draw")) > 0
    w.page.get_by_test_id("write-top-k").evaluate("e => { e.value = '1'; e.dispatchEvent(new Event('input')); }")
    assert w.text("write-cand-0-draw") == "1.000" and w.text("write-cand-1-draw") == "0.000"


@pytest.mark.parametrize("size", VIEWPORTS)
def test_writing_chapter(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    api = generate(w.base, {"prompt": "The capital of France is", "layer": 29, "head": 0, "max_new_tokens": 4})
    open_at_step(w, "chapter=writing&step=predict", size, "predict")
    assert w.page.get_by_test_id("write-candidates").count() == 0  # no bars before the guess
    w.page.get_by_test_id("write-guess").filter(has_text="Paris").click()
    assert "favourite" in w.text("write-verdict")
    assert raw(w, "write-cand-0-token") == " Paris" == api["tokens"][0]["token"]
    open_at_step(w, "chapter=writing&step=cache", size, "cache")
    check_token(w, api, 3)
    check_token(w, api, 1)
    assert w.text("writing-kv-len") == str(api["tokens"][1]["kv_len"])
    assert w.text("writing-cache-1k") == "47.2 MB" and w.text("writing-cache-8k") == "377.5 MB"
    out = run_python(w.text("numpy-code"))
    assert out["per_token"] == 46080 and out["cache_8k_mb"] == 377.5
    assert abs(out["t1"][0] - api["tokens"][0]["candidates"][0]["p"]) < 0.1  # the view opened at token 0; among ten
    fits(w)
