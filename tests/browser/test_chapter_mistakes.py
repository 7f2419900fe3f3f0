"""Chapter mistakes in headless Chromium: each mistake's weights beside the right (causal) ones, as the
API computes them, what breaks read off the two tables, and the NumPy panel's code run and compared."""

from __future__ import annotations

import pytest

from tests.browser.chapters import VIEWPORTS, num, open_chapter
from tests.browser.conftest import Watched
from tests.browser.helpers import chapter_fits, close, drawn_pixels, f3, get, post, run_python

pytestmark = pytest.mark.browser


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
