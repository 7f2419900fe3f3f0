"""Chapter block in headless Chromium: every point of the real model's layer as the API gives it, the
pre-LN what-if, a GPT-2 model's own pre-LN order (with the heads step), a bad sentence's message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.chapters import ANIMAL, VIEWPORTS, open_chapter
from tests.browser.conftest import Watched, running_server, watched_page
from tests.browser.helpers import chapter_fits, close, drawn_pixels, f3, post, run_python

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("size", VIEWPORTS)
def test_block_every_step_shows_the_servers_numbers(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    blk = post(w.base, "/api/block", {"sentence": ANIMAL, "layer": 2})
    t = blk["tokens"].index("it")
    open_chapter(w, "chapter=block&layer=2", size)
    assert w.text("block-token") == "“it”"
    assert blk["order"] == ["input", "attention", "residual", "norm1", "ffn", "residual2", "output"]
    shown = {"input": ["input"], "attention": ["attention"], "add": ["residual"], "norm": ["norm1"], "ffn": ["ffn"]}
    for step, names in shown.items():
        w.page.get_by_test_id(f"step-{step}").click()
        w.page.wait_for_selector(f"[data-testid=block-table-{names[0]}]")
        for name in names:
            assert w.text(f"block-norm-{name}") == f3(blk["norms"][name][t])
            assert w.text(f"block-table-{name}-{t}-0") == f3(blk["norms"][name][t])
            assert w.text(f"block-table-{name}-{t}-1") == f3(blk["vectors"][name][t][0])
        # the diagram lists every point in the model's order, with the token's length
        assert w.text(f"block-point-{names[0]}").endswith(f3(blk["norms"][names[0]][t]))
    out = run_python(w.text("numpy-code"))  # the whole layer in NumPy from the weights file
    assert out["layer"] == 2
    for name in blk["order"]:
        assert close(out["lengths"][name], blk["norms"][name], 1e-3), name
    assert drawn_pixels(w) > 500
    chapter_fits(w)


def test_block_post_ln_against_the_pre_ln_what_if(watched: Watched) -> None:
    w = watched
    blk = post(w.base, "/api/block", {"sentence": ANIMAL, "layer": 3})
    t = blk["tokens"].index("it")
    open_chapter(w, "chapter=block&step=order&layer=3")
    text = w.text("chapter-text")
    assert "post-LN" in text and "pre-LN" in text and "what-if" in text
    assert w.text("block-whatif-norm") == f3(blk["what_if"]["norms"]["output"][t])
    assert w.text("block-whatif-cos") == f3(blk["what_if"]["output_cosine"][t])
    assert w.text("block-norm-output") == f3(blk["norms"]["output"][t])
    out = run_python(w.text("numpy-code"))
    assert close(out["lengths"]["post_ln"], blk["norms"]["output"], 1e-3)
    assert close(out["lengths"]["pre_ln"], blk["what_if"]["norms"]["output"], 1e-3)
    assert drawn_pixels(w) > 500


def test_a_bad_sentence_shows_the_servers_message(watched: Watched) -> None:
    w = watched
    w.expect_console_error("422")
    open_chapter(w, "chapter=block&layer=1")
    w.page.get_by_test_id("block-sentence").fill("word " * 100)
    w.page.get_by_test_id("block-sentence").press("Enter")
    w.page.wait_for_selector("#chapter-error:not([hidden])", timeout=30_000)
    assert "64" in w.text("chapter-error")


def test_a_gpt2_model_has_its_own_pre_ln_order(
    browser: Any, tiny_gpt2_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a GPT-2 model (--model), the block follows its pre-LN order and the heads step its 2 heads × c_proj."""
    monkeypatch.setenv("ATTENTION_MODEL", str(tiny_gpt2_dir))
    with running_server() as base, watched_page(browser, base) as w:
        blk = post(base, "/api/block", {"sentence": "The quick brown fox", "layer": 1})
        assert blk["order"] == ["input", "ln_1", "attention", "residual", "ln_2", "mlp", "output"]
        open_chapter(w, "chapter=block&step=attention&layer=1&sentence=The%20quick%20brown%20fox&tok=2")
        flow = [w.text(f"block-point-{name}") for name in blk["order"]]
        assert [f.split(" ")[0] for f in flow] == blk["order"]
        assert w.text("block-norm-ln_1") == f3(blk["norms"]["ln_1"][2])
        assert w.text("block-norm-attention") == f3(blk["norms"]["attention"][2])
        w.page.get_by_test_id("step-order").click()
        w.page.wait_for_selector("[data-testid=block-table-output]")
        assert "pre-LN" in w.text("chapter-text") and w.page.locator("[data-testid=block-whatif-table]").count() == 0
        assert drawn_pixels(w) > 500

        real = post(base, "/api/multihead/model", {"sentence": "The quick brown fox", "layer": 0})
        open_chapter(w, "chapter=heads&step=model&layer=0&sentence=The%20quick%20brown%20fox&tok=1")
        assert w.text("heads-model-width") == str(len(real["concat"][0]))
        for j in range(min(8, len(real["output"][1]))):
            assert w.text(f"heads-model-out-0-{j}") == f3(real["output"][1][j])
