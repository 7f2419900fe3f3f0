"""Chapters rnn, projections, scaling and positions in real headless Chromium: opened by URL, the
server's numbers read off the page and compared with the API's, the 3D view drawn, the NumPy panel's
code (as the page shows it) run in a plain Python and compared with the API, on a desktop (1280×720)
and a phone (390×844), with no sideways scrolling."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched
from tests.browser.helpers import chapter_fits, chapter_violations, close, drawn_pixels, f3, get, post, run_python

pytestmark = pytest.mark.browser

VIEWPORTS = [(1280, 720), (390, 844)]


def f4(x: float) -> str:
    return f"{x:.4f}"


def sig(x: float) -> str:
    """The page's sig(): 4 decimals, or e-notation below 0.001."""
    if x != 0 and abs(x) < 0.001:
        mantissa, exp = f"{x:.2e}".split("e")
        return f"{mantissa}e{int(exp)}".replace("-", "\u2212")
    return f"{x:.4f}"


def open_chapter(w: Watched, query: str, size: tuple[int, int], step: str) -> None:
    w.page.set_viewport_size({"width": size[0], "height": size[1]})
    w.page.goto(w.base + "/?" + query)
    wait(w, step)


def wait(w: Watched, step: str) -> None:
    w.page.wait_for_selector(f'#app[data-ready="true"][data-step="{step}"]', timeout=60_000)
    w.page.wait_for_selector("#chapter-text:not(:empty)", timeout=30_000)


def fits(w: Watched) -> None:
    """No sideways scrolling; the 3D view, the explanation and the panel do not overlap; nor do the
    3D view's labels (each label's box against every other's)."""
    chapter_fits(w)
    labels = w.page.evaluate(
        """() => [...document.querySelectorAll('#chapter-stage .stage-label')]
            .filter((e) => e.style.display !== 'none' && e.textContent.trim())
            .map((e) => {
                const r = e.getBoundingClientRect();
                return [e.textContent, r.left, r.top, r.right, r.bottom];
            })"""
    )
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            a, b = labels[i][1:], labels[j][1:]
            overlap = min(a[2], b[2]) - max(a[0], b[0]) > 2 and min(a[3], b[3]) - max(a[1], b[1]) > 2
            assert not overlap, f"3D labels {labels[i][0]!r} and {labels[j][0]!r} overlap"


def param(w: Watched, name: str) -> str:
    values: list[str] = parse_qs(urlparse(w.page.url).query)[name]
    return values[0]


# ---- rnn -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", VIEWPORTS)
def test_rnn(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    api = post(w.base, "/api/rnn", {"words": ["the", "cat", "ate", "its", "fish"]})
    open_chapter(w, "chapter=rnn&step=fade", size, "fade")
    assert w.text("rnn-steps") == "5" and w.text("attention-steps") == "1"
    assert w.text("rnn-influence-first") == sig(api["influence"][0])
    assert w.text("rnn-influence-last") == sig(api["influence"][4])
    assert w.text("rnn-last-to-first") == sig(api["last_to_first"])
    for t in range(5):
        assert w.text(f"rnn-influence-{t}") == sig(api["influence"][t])
    assert f"{api['influence'][0]:.4f} at h_1" in w.text("chapter-text")
    out = run_python(w.text("numpy-code"))
    assert close(out["influence"], api["influence"], 1e-12)
    assert close(out["h"], api["h"], 1e-12)
    assert close(out["last_to_first"], api["last_to_first"], 1e-12)
    assert drawn_pixels(w) > 500
    fits(w)

    w.page.keyboard.press("ArrowRight")
    wait(w, "direct")
    for j in range(5):
        assert w.text(f"rnn-weight-{j}") == f3(api["weights"][4][j])
    fits(w)


def test_rnn_other_words(watched: Watched) -> None:
    w = watched
    words = ["the", "animal", "did", "not", "cross", "the", "street", "because", "it", "was", "too", "tired"]
    api = post(w.base, "/api/rnn", {"words": words})
    open_chapter(w, "chapter=rnn&step=fade", (1280, 720), "fade")
    w.page.get_by_test_id("rnn-long").click()
    expect(w.page.get_by_test_id("rnn-steps")).to_have_text("12", timeout=30_000)
    wait(w, "fade")
    assert param(w, "words") == " ".join(words)
    assert w.text("rnn-influence-last") == sig(api["influence"][11])
    assert api["influence"][11] < api["influence"][0] / 100  # the first word has faded
    assert close(run_python(w.text("numpy-code"))["influence"], api["influence"], 1e-12)
    fits(w)

    box = w.page.get_by_test_id("rnn-words")  # typed words
    box.fill("a  dog   barks")
    box.press("Enter")
    expect(w.page.get_by_test_id("rnn-steps")).to_have_text("3", timeout=30_000)
    wait(w, "fade")
    small = post(w.base, "/api/rnn", {"words": ["a", "dog", "barks"]})
    assert param(w, "words") == "a dog barks" and w.text("rnn-influence-last") == sig(small["influence"][2])


# ---- projections ---------------------------------------------------------------------------------


@pytest.mark.parametrize("size", VIEWPORTS)
def test_projections(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    api = get(w.base, "/api/projections")
    open_chapter(w, "chapter=projections&step=q&tok=3", size, "q")
    for j in range(8):
        assert w.text(f"proj-q-0-{j}") == f3(api["q"][3][j])
        assert w.text(f"proj-w-q-2-{j}") == f3(api["w_q"][2][j])
    assert w.text("proj-q-0") == f4(api["q"][3][0])
    assert w.text("proj-q-norm") == f4(math.sqrt(sum(v * v for v in api["q"][3])))
    out = run_python(w.text("numpy-code"))
    assert out["token"] == "customers"
    assert close(out["x"], api["x"][3], 1e-12) and close(out["q"], api["q"][3], 1e-12)
    assert drawn_pixels(w) > 300
    fits(w)

    w.page.get_by_test_id("proj-token-1").click()  # "*"
    expect(w.page.get_by_test_id("proj-token")).to_have_text("1 (*)", timeout=30_000)
    wait(w, "q")
    assert param(w, "tok") == "1"
    assert w.text("proj-q-0") == f4(api["q"][1][0])
    assert close(run_python(w.text("numpy-code"))["q"], api["q"][1], 1e-12)

    w.page.get_by_test_id("step-all").click()
    wait(w, "all")
    assert w.text("proj-v-all-2-7") == f3(api["v"][2][7])
    out = run_python(w.text("numpy-code"))
    for k in ("q", "k", "v"):
        assert close(out[k], api[k], 1e-12)
    fits(w)


# ---- scaling -------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", VIEWPORTS)
def test_scaling(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    api = post(w.base, "/api/scaling", {"d_k": 256})
    open_chapter(w, "chapter=scaling&step=unscaled&dk=256", size, "unscaled")
    assert w.text("scaling-d-k") == "256" and w.text("scaling-sqrt") == "16.0000"
    assert w.text("scaling-std") == f4(api["std"])
    assert w.text("scaling-max-unscaled") == f4(api["max_unscaled"])
    assert w.text("scaling-max-scaled") == f4(api["max_scaled"])
    assert w.text("scaling-entropy-unscaled") == f4(api["entropy_unscaled"])
    assert w.text("scaling-entropy-scaled") == f4(api["entropy_scaled"])
    for j in range(8):
        assert w.text(f"scaling-unscaled-{j}") == f3(api["unscaled"][j])
        assert w.text(f"scaling-scaled-{j}") == f3(api["scaled"][j])
    out = run_python(w.text("numpy-code"))
    assert close(out["std"], api["std"], 1e-9)  # the same draws; the sum may round differently
    for k in ("max_unscaled", "max_scaled", "entropy_unscaled", "entropy_scaled"):
        assert close(out[k], api[k], 1e-12), k
    assert w.page.get_by_test_id("scaling-chart").count() == 1
    assert drawn_pixels(w) > 500
    fits(w)


def test_scaling_control_and_its_limit(watched: Watched) -> None:
    w = watched
    open_chapter(w, "chapter=scaling&step=spread&dk=64", (1280, 720), "spread")
    box = w.page.get_by_test_id("scaling-dk")
    box.fill("1000")
    box.press("Enter")
    expect(w.page.get_by_test_id("scaling-d-k")).to_have_text("1000", timeout=30_000)
    api = post(w.base, "/api/scaling", {"d_k": 1000})
    assert param(w, "dk") == "1000" and w.text("scaling-std") == f4(api["std"])
    assert abs(api["std"] / math.sqrt(1000) - 1) < 0.05
    # the box itself refuses 2000 (min 2, max 1024): nothing is sent, the page keeps d_k = 1000
    box.fill("2000")
    box.press("Enter")
    assert param(w, "dk") == "1000" and w.text("scaling-d-k") == "1000"
    # a URL outside 2 … 1024: the server's 422 names d_k and the limit, shown on the page
    w.expect_console_error("422")
    w.page.goto(w.base + "/?chapter=scaling&step=spread&dk=2000")
    w.page.wait_for_selector("[data-testid=chapter-error]:not([hidden])", timeout=20_000)
    assert "d_k" in w.text("chapter-error") and "1024" in w.text("chapter-error")


# ---- positions -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", VIEWPORTS)
def test_positions_toy(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    api = post(w.base, "/api/positions", {"words": ["the", "cat", "ate", "its", "fish"], "order": [0, 4, 2, 3, 1]})
    open_chapter(w, "chapter=positions&step=plain", size, "plain")
    assert w.text("pos-plain-gap") == "0"
    assert w.text("pos-proof") == "max |W_perm − P·W·Pᵀ| = 0"
    order = api["order"]
    for i in range(5):
        for j in range(5):
            assert w.text(f"pos-plain-{i}-{j}") == f3(api["plain"][i][j])
            assert w.text(f"pos-plain-perm-{i}-{j}") == f3(api["plain"][order[i]][order[j]])
    out = run_python(w.text("numpy-code"))
    assert out["plain_gap"] == 0.0 and out["plain_perm"] == api["plain_perm"]  # exactly
    assert close(out["encoded_gap"], api["encoded_gap"], 1e-12)
    assert drawn_pixels(w) > 500
    fits(w)

    w.page.keyboard.press("ArrowRight")
    wait(w, "sinusoid")
    assert w.text("pos-enc-gap") == f4(api["encoded_gap"]) and api["encoded_gap"] > 0.1
    assert w.text("pos-pe-3-0") == f3(math.sin(3))
    assert w.text("pos-enc-perm-1-4") == f3(api["encoded_perm"][1][4])
    fits(w)


def test_positions_model(watched: Watched) -> None:
    w = watched
    api = post(w.base, "/api/positions", {"layer": 0, "head": 2})["model"]
    open_chapter(w, "chapter=positions&step=model", (1280, 720), "model")
    assert w.text("pos-model-head") == "0, 2" and w.text("pos-model-gap") == f4(api["gap"])
    n = len(api["tokens"])
    for i in range(n):
        for j in range(n):
            assert w.text(f"pos-model-perm-{i}-{j}") == f3(api["weights_perm"][i][j])
    out = run_python(w.text("numpy-code"))  # a NumPy-only forward of the model, from its weights file
    assert close(out["weights_perm"], api["weights_perm"], 1e-4)
    assert close(out["gap"], api["gap"], 1e-4)
    assert drawn_pixels(w) > 500
    fits(w)

    w.page.get_by_test_id("pos-layer").select_option("3")
    expect(w.page.get_by_test_id("pos-model-head")).to_have_text("3, 2", timeout=60_000)
    wait(w, "model")
    other = post(w.base, "/api/positions", {"layer": 3, "head": 2})["model"]
    assert param(w, "layer") == "3" and w.text("pos-model-gap") == f4(other["gap"])


def test_positions_bad_order_is_named(watched: Watched) -> None:
    w = watched
    w.expect_console_error("422")
    w.page.goto(w.base + "/?chapter=positions&step=plain&order=0%200%201%202%203")
    w.page.wait_for_selector("[data-testid=chapter-error]:not([hidden])", timeout=30_000)
    assert "order" in w.text("chapter-error")


# ---- accessibility -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "?chapter=rnn&step=fade",
        "?chapter=projections&step=q",
        "?chapter=scaling&step=spread",
        "?chapter=positions&step=sinusoid",
        "?chapter=positions&step=model",
    ],
)
def test_no_accessibility_violations(browser: Any, server: str, query: str) -> None:
    """axe-core at WCAG 2.x A and AA on each chapter (the shaded tables' contrast included)."""
    assert chapter_violations(browser, server, query) == []
