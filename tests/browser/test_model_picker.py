"""The model picker of sentence mode (issue 21) in real Chromium against a real server: a sentence
run by all-MiniLM-L6-v2, then by the SmolLM2 decoder picked in the model bar — its causal weights
(nothing above the diagonal), its 9 query heads grouped by the 3 key/value heads they share in the
head picker and the overview, and `model=` in the URL, so a link (and a room) opens the same model.
"""

from __future__ import annotations

import json
import time
import urllib.request
from urllib.parse import parse_qs, quote, urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched

pytestmark = pytest.mark.browser

SENTENCE = "The cat sat on the mat because it was warm."
DECODER = "smollm2-135m"


def _decoder_loaded(server: str) -> None:
    """Load the decoder before the page asks (a fresh data folder converts its GGUF file first)."""
    deadline = time.monotonic() + 240
    url = f"{server}/api/models?load={DECODER}"
    while True:
        with urllib.request.urlopen(url, timeout=60) as r:
            entry = next(m for m in json.loads(r.read())["models"] if m["id"] == DECODER)
        if entry.get("loaded"):
            return
        assert time.monotonic() < deadline, entry
        time.sleep(0.5)
        url = f"{server}/api/models"


def _model_param(w: Watched) -> str | None:
    value: str | None = parse_qs(urlparse(w.page.url).query).get("model", [None])[0]
    return value


def _causal_table(w: Watched, n: int) -> None:
    """The softmax step's table: every row sums to 1, nothing above the diagonal."""
    for i in range(n):
        assert w.number(f"rowsum-{i}") == 1.0
        for j in range(i + 1, n):
            assert w.number(f"cell-{i}-{j}") == 0, (i, j)
    assert w.number(f"cell-{n - 1}-0") > 0


def _grouped_heads(w: Watched) -> None:
    """The head picker: 9 heads in 3 groups, one per KV head, then the mean."""
    groups = w.page.eval_on_selector_all(
        "#head-select optgroup",
        "(gs) => gs.map((g) => ({ kv: g.dataset.kv, label: g.label, heads: [...g.children].map((o) => o.value) }))",
    )
    assert [g["heads"] for g in groups] == [["0", "1", "2"], ["3", "4", "5"], ["6", "7", "8"]]
    assert [g["kv"] for g in groups] == ["0", "1", "2"]
    assert groups[1]["label"].startswith("KV head 1: heads 3–5")
    values = w.page.eval_on_selector_all("#head-select option", "(os) => os.map((o) => o.value)")
    assert values == [str(h) for h in range(9)] + ["mean"]


def test_picking_smollm2_runs_the_sentence_on_the_decoder(watched: Watched, server: str) -> None:
    w = watched
    _decoder_loaded(server)
    w.goto(f"?sentence={quote(SENTENCE)}&step=softmax")
    w.wait_ready(mode="sentence", layer=0, head=0)
    expect(w.page.get_by_test_id("model-name")).to_contain_text("all-MiniLM-L6-v2: 6 layers × 12 heads")
    picker = w.page.get_by_test_id("model-select")
    expect(picker).to_be_visible()
    assert picker.locator("option").evaluate_all("(os) => os.map((o) => o.value)") == ["all-minilm-l6-v2", DECODER]
    expect(w.page.get_by_test_id("row-0")).to_contain_text("[CLS]")
    assert w.page.locator("#head-select optgroup").count() == 0  # 12 heads, 12 KV heads: no groups

    picker.select_option(DECODER)
    expect(w.page.get_by_test_id("model-name")).to_contain_text("SmolLM2-135M-Instruct: 30 layers × 9 heads")
    expect(w.page.get_by_test_id("model-name")).to_contain_text("sharing 3 key/value heads")
    w.wait_ready(mode="sentence", layer=0, head=0, step="softmax", mask="causal")
    expect(w.page.get_by_test_id("row-0")).to_contain_text("The")  # no [CLS]: the decoder's own tokens
    assert _model_param(w) == DECODER
    n = w.page.locator("#matrix tbody tr[data-row]").count()
    assert n == 11  # The cat sat on the mat because it was warm .
    _causal_table(w, n)
    _grouped_heads(w)
    expect(w.page.get_by_test_id("mask-full")).to_be_disabled()  # a decoder has only its causal mask

    # the overview: 30 × 9 heads under "KV head 0 … 2", each head's number in its group's colour
    w.page.wait_for_selector('#overview-grid[data-count="270"]', timeout=60_000)
    kv = w.page.eval_on_selector_all(".ov-kv", "(s) => s.map((e) => [e.textContent, e.style.gridColumn])")
    assert kv == [["KV head 0", "span 3"], ["KV head 1", "span 3"], ["KV head 2", "span 3"]]
    heads = w.page.eval_on_selector_all(".ov-head[data-kv]", "(s) => s.map((e) => [e.textContent, e.dataset.kv])")
    assert heads == [[str(h), str(h // 3)] for h in range(9)]
    assert w.page.get_by_test_id("head-4-7").get_attribute("aria-label") == "layer 4 head 7 (KV head 2)"

    # a head of the second group; then the link opens the decoder again, at that head
    w.page.get_by_test_id("head-select").select_option("4")
    w.wait_ready(mode="sentence", layer=0, head=4)
    _causal_table(w, n)
    url = w.page.url
    w.page.goto("about:blank")
    w.page.goto(url)
    w.wait_ready(mode="sentence", head=4, mask="causal")
    expect(w.page.get_by_test_id("model-name")).to_contain_text("SmolLM2-135M-Instruct")
    expect(w.page.get_by_test_id("head-select")).to_have_value("4")
    expect(w.page.get_by_test_id("model-select")).to_have_value(DECODER)
    _grouped_heads(w)
    _causal_table(w, n)

    # a room's snapshot carries the model: applied to a page showing MiniLM, it switches
    snap = w.page.evaluate(
        "() => { const d = {}; document.dispatchEvent(new CustomEvent('attention:snapshot', { detail: d })); "
        "return d.snapshot; }"
    )
    assert snap["model"] == DECODER and snap["head"] == "4"
    w.page.goto(f"{w.base}/?sentence={quote(SENTENCE)}&step=softmax")
    w.wait_ready(mode="sentence", head=0)
    expect(w.page.get_by_test_id("row-0")).to_contain_text("[CLS]")
    w.page.evaluate(
        "async (s) => { const d = { ...s }; document.dispatchEvent(new CustomEvent('attention:apply', { detail: d })); "
        "await d.done; }",
        snap,
    )
    expect(w.page.get_by_test_id("model-name")).to_contain_text("SmolLM2-135M-Instruct")
    w.wait_ready(mode="sentence", head=4, mask="causal")
    expect(w.page.get_by_test_id("row-0")).to_contain_text("The")
    _causal_table(w, n)

    # back to MiniLM: its own 12 heads and [CLS] again, no model= in the URL
    w.page.get_by_test_id("model-select").select_option("all-minilm-l6-v2")
    expect(w.page.get_by_test_id("model-name")).to_contain_text("all-MiniLM-L6-v2: 6 layers × 12 heads")
    w.wait_ready(mode="sentence", layer=0, head=0)
    expect(w.page.get_by_test_id("row-0")).to_contain_text("[CLS]")
    assert _model_param(w) is None
