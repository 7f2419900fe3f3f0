"""Chapter projections in headless Chromium: x, W_Q, W_K, W_V and q, k, v as the API gives them, the
NumPy panel's code run and compared, at 1280×720 and 390×844."""

from __future__ import annotations

import math

import pytest
from playwright.sync_api import expect

from tests.browser.chapters import VIEWPORTS, f4, fits, open_at_step, param, wait
from tests.browser.conftest import Watched
from tests.browser.helpers import close, drawn_pixels, f3, fewest_labels, get, run_python, watch_labels

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("size", VIEWPORTS)
def test_projections(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    api = get(w.base, "/api/projections")
    open_at_step(w, "chapter=projections&step=q&tok=3", size, "q")
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

    shown = watch_labels(w)
    w.page.get_by_test_id("proj-token-1").click()  # "*"
    expect(w.page.get_by_test_id("proj-token")).to_have_text("1 (*)", timeout=30_000)
    wait(w, "q")
    assert fewest_labels(w) == shown > 0  # the vectors' names stayed while they were drawn anew
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
