"""Chapters heads, block and mistakes in real headless Chromium: opened by URL, their numbers read
off the page and compared with the API's, the 3D view drawn, the NumPy panel's code run in a plain
Python and compared with the API, on a desktop (1280×720) and a phone (390×844)."""

# ruff: noqa: F811  (the model tests' GPT-2 fixture is imported by name, then requested as an argument)

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Watched, running_server, watched_page
from tests.browser.helpers import chapter_fits, chapter_violations, close, drawn_pixels, f3, get, post, run_python
from tests.model.conftest import tiny_gpt2_dir  # noqa: F401  (a fixture: a tiny random GPT-2 saved offline)

pytestmark = pytest.mark.browser

VIEWPORTS = [(1280, 720), (390, 844)]
ANIMAL = "The animal didn't cross the street because it was too tired."


def num(text: str) -> float:
    return float(text.strip().replace("\u2212", "-"))


def open_chapter(w: Watched, query: str, size: tuple[int, int] = (1280, 720)) -> None:
    w.page.set_viewport_size({"width": size[0], "height": size[1]})
    w.page.goto(w.base + "/?" + query)
    w.page.wait_for_selector('#app[data-ready="true"]', timeout=60_000)
    w.page.wait_for_selector("#chapter-text:not(:empty)", timeout=30_000)


# ---- heads ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", VIEWPORTS)
def test_heads_example_numbers_and_code(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    ex = get(w.base, "/api/multihead/example?heads=3&seed=7")
    mh = post(
        w.base, "/api/multihead", {k: ex[k] for k in ("tokens", "x", "w_q", "w_k", "w_v", "w_o")} | {"mask": "causal"}
    )
    open_chapter(w, "chapter=heads&step=heads&heads=3&mask=causal&word=2", size)
    assert w.text("heads-count") == "3"
    for h in range(3):  # every head's weights, side by side, as the server computed them
        for i in range(4):
            for j in range(4):
                assert w.text(f"head-weights-{h}-{i}-{j}") == f3(mh["heads"]["weights"][h][i][j])
        row = mh["heads"]["weights"][h][2]
        top = max(range(4), key=lambda j: row[j])
        assert f3(row[top]) in w.text(f"heads-top-{h}") and ex["tokens"][top] in w.text(f"heads-top-{h}")
    assert close(run_python(w.text("numpy-code"))["weights"], mh["heads"]["weights"], 1e-9)
    assert drawn_pixels(w) > 500
    chapter_fits(w)

    w.page.get_by_test_id("step-concat").click()
    w.page.wait_for_selector("[data-testid=heads-concat-table]")
    assert w.text("heads-concat-table-2-5") == f3(mh["concat"][2][5])
    assert close(run_python(w.text("numpy-code"))["concat"], mh["concat"], 1e-9)

    w.page.keyboard.press("ArrowRight")
    w.page.wait_for_selector("[data-testid=heads-formula]")
    formula = w.text("heads-formula")
    assert "MultiHead(Q, K, V) = Concat(head_1, head_2, head_3) · W_O" in formula  # three heads: each named
    assert w.text("heads-output-table-2-3") == f3(mh["output"][2][3])
    assert close(run_python(w.text("numpy-code"))["output"], mh["output"], 1e-9)
    chapter_fits(w)

    # new weights: the next seed, from the server
    ex8 = get(w.base, "/api/multihead/example?heads=3&seed=8")
    mh8 = post(
        w.base, "/api/multihead", {k: ex8[k] for k in ("tokens", "x", "w_q", "w_k", "w_v", "w_o")} | {"mask": "causal"}
    )
    w.page.get_by_test_id("heads-reseed").click()
    w.page.get_by_test_id("heads-reseed").filter(has_text="seed 8").wait_for()
    assert w.text("heads-output-table-2-3") == f3(mh8["output"][2][3]) and "seed=8" in w.page.url


@pytest.mark.parametrize("size", VIEWPORTS)
def test_heads_real_model_step(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    real = post(w.base, "/api/multihead/model", {"sentence": ANIMAL, "layer": 3})
    open_chapter(w, "chapter=heads&step=model", size)
    t = real["tokens"].index("it")
    assert w.text("heads-model-token") == "“it”" and w.text("heads-model-width") == "384"
    for j in range(8):
        assert w.text(f"heads-model-out-0-{j}") == f3(real["output"][t][j])
    out = run_python(w.text("numpy-code"))  # W_O read from the model's own weights file, in NumPy
    assert out["token"] == t and close(out["output"], real["output"][t], 1e-5)
    assert drawn_pixels(w) > 500
    chapter_fits(w)


# ---- block ---------------------------------------------------------------------------------------


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


# ---- mistakes ------------------------------------------------------------------------------------


# what the page calls each mistake (never the API's names)
NAMED = {
    "no-scale": "no ÷√d_k",
    "softmax-columns": "softmax down the columns",
    "mask-after-softmax": "mask after softmax",
}


@pytest.mark.parametrize("size", VIEWPORTS)
def test_mistakes_each_beside_the_right_result(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    ex = get(w.base, "/api/examples/the-cat-ate-its-fish")
    base = {"tokens": ex["tokens"], "q": ex["q"], "k": ex["k"], "v": ex["v"], "mask": "causal"}
    right = post(w.base, "/api/attention", base)
    open_chapter(w, "chapter=mistakes", size)
    for mistake in ("no-scale", "softmax-columns", "mask-after-softmax"):
        wrong = post(w.base, "/api/attention", base | {"mistake": mistake})
        w.page.get_by_test_id(f"step-{mistake}").click()
        w.page.locator("[data-testid=mistake-wrong] caption", has_text=f"({NAMED[mistake]})").wait_for()
        for i in range(5):
            for j in range(5):
                assert w.text(f"mistake-right-{i}-{j}") == f3(right["weights"][i][j])
                assert w.text(f"mistake-wrong-{i}-{j}") == f3(wrong["weights"][i][j])
            assert w.text(f"mistake-wrong-{i}-5") == f3(sum(wrong["weights"][i]))  # Σ row
        sums = [sum(r) for r in wrong["weights"]]
        if mistake == "no-scale":  # saturation: the largest weight grows
            assert num(w.text("mistake-max-wrong")) > num(w.text("mistake-max-right"))
            assert num(w.text("mistake-entropy-wrong")) < num(w.text("mistake-entropy-right"))
        else:  # rows that no longer sum to 1, outlined
            assert any(abs(s - 1) > 1e-3 for s in sums)
            assert w.page.locator("[data-testid=mistake-wrong] td.off-sum").count() == sum(
                abs(s - 1) > 5e-4 for s in sums
            )
        if mistake == "mask-after-softmax":  # the future leaks in: change only the last key, earlier rows move
            k2 = [*ex["k"][:-1], [2 * x + 1 for x in ex["k"][-1]]]
            moved = post(w.base, "/api/attention", base | {"k": k2, "mistake": mistake})["weights"]
            leak = max(
                abs(a - b)
                for r1, r2 in zip(wrong["weights"][:-1], moved[:-1], strict=True)
                for a, b in zip(r1, r2, strict=True)
            )
            assert leak > 0.1 and w.text("mistake-leak-wrong") == f3(leak) and w.text("mistake-leak-right") == "0.000"
        out = run_python(w.text("numpy-code"))
        assert close(out["right"], right["weights"], 1e-9) and close(out["wrong"], wrong["weights"], 1e-9)
        assert drawn_pixels(w) > 500
        chapter_fits(w)
    w.page.get_by_test_id("step-caveat").click()
    w.page.wait_for_selector("[data-testid=mistakes-caveat]")
    assert "not why" in w.text("mistakes-caveat")


def test_a_bad_sentence_shows_the_servers_message(watched: Watched) -> None:
    w = watched
    w.expect_console_error("422")
    open_chapter(w, "chapter=block&layer=1")
    w.page.get_by_test_id("block-sentence").fill("word " * 100)
    w.page.get_by_test_id("block-sentence").press("Enter")
    w.page.wait_for_selector("#chapter-error:not([hidden])", timeout=30_000)
    assert "64" in w.text("chapter-error")


@pytest.mark.parametrize(
    "query",
    [
        "?chapter=heads&step=heads&heads=3",
        "?chapter=heads&step=wo",
        "?chapter=heads&step=model",
        "?chapter=block&step=order",
        "?chapter=mistakes&step=softmax-columns",
    ],
)
def test_no_accessibility_violations(browser: Any, server: str, query: str) -> None:
    """axe-core at WCAG 2.x A and AA on each chapter (contrast of the shaded tables included)."""
    assert chapter_violations(browser, server, query) == []


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
