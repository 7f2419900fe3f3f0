"""Chapter rnn in headless Chromium: the hidden states and the first word's fading influence as the API
gives them, the NumPy panel's code run and compared, the chain drawn with no label over another."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.chapters import VIEWPORTS, fits, open_at_step, param, sig, wait
from tests.browser.conftest import Watched
from tests.browser.helpers import (
    close,
    drawn_pixels,
    f3,
    fewest_labels,
    labels_shown,
    next_frames,
    post,
    run_python,
    watch_labels,
)

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("size", VIEWPORTS)
def test_rnn(watched: Watched, size: tuple[int, int]) -> None:
    w = watched
    api = post(w.base, "/api/rnn", {"words": ["the", "cat", "ate", "its", "fish"]})
    open_at_step(w, "chapter=rnn&step=fade", size, "fade")
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
    open_at_step(w, "chapter=rnn&step=fade", (1280, 720), "fade")
    shown = watch_labels(w)
    w.page.get_by_test_id("rnn-long").click()
    expect(w.page.get_by_test_id("rnn-steps")).to_have_text("12", timeout=30_000)
    wait(w, "fade")
    next_frames(w.page, 2)
    # the five words' chain names stayed until the twelve words' came
    assert fewest_labels(w) == min(shown, labels_shown(w)) > 0
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
