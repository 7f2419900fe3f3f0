"""Chapter positions in headless Chromium: reordered words give the same weights moved (P·W·Pᵀ) without
positions, other weights with them, and the real model's head; a bad order is named."""

from __future__ import annotations

import math

import pytest
from playwright.sync_api import expect

from tests.browser.chapters import VIEWPORTS, f4, fits, open_at_step, param, wait
from tests.browser.conftest import Watched
from tests.browser.helpers import close, drawn_pixels, f3, post, run_python

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("size", VIEWPORTS)
def test_positions_toy(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    api = post(w.base, "/api/positions", {"words": ["the", "cat", "ate", "its", "fish"], "order": [0, 4, 2, 3, 1]})
    open_at_step(w, "chapter=positions&step=plain", size, "plain")
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
    open_at_step(w, "chapter=positions&step=model", (1280, 720), "model")
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
