"""The lesson's frame in real headless Chromium: every chapter by the contents list (phone, tablet;
by URL: test_layout's walks), ← → within a chapter and PageDown/PageUp across chapters, the NumPy
panel's code run in a plain Python and compared with the API, and predict-first."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.chapters import shows_chapter
from tests.browser.conftest import ROOT, Watched, watched_page
from tests.browser.helpers import post, run_python
from tests.browser.registry import CHAPTERS

pytestmark = pytest.mark.browser

ATTENTION = {"steps", "masks"}
VIEWPORTS = {"desktop": (1280, 720), "tablet": (768, 1024), "phone": (390, 844)}
SEED_INPUT = {  # the-cat-ate-its-fish, as app/examples.py serves it
    "tokens": ["the", "cat", "ate", "its", "fish"],
    "q": [[1.5, 0], [0, 1.2], [1.2, 0], [2, 0], [0, 1.5]],
    "k": [[0, 0], [3, 0], [0, 3], [0.5, 0], [1, 0.5]],
    "v": [[0, 0], [1, 0], [0, 0.5], [0.3, 0], [0, 1]],
}


def written(chapter: str) -> bool:
    return (ROOT / "static/js/chapters" / f"{chapter}.js").exists()


def query(w: Watched) -> dict[str, list[str]]:
    return parse_qs(urlparse(w.page.url).query)


def ready(w: Watched, **attrs: str | int) -> None:
    sel = '#app[data-ready="true"]' + "".join(f'[data-{k}="{v}"]' for k, v in attrs.items())
    w.page.wait_for_selector(sel, timeout=20_000)


def close(a: Any, b: Any, tol: float = 1e-6) -> bool:
    """Nested lists equal within tol; None (JSON's −∞) only where the other has None."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), abs_tol=tol)


def no_sideways_scroll(w: Watched) -> None:
    width = w.page.evaluate("document.documentElement.scrollWidth")
    assert width <= w.page.viewport_size["width"] + 1, f"the page is {width} px wide"


# ---- every chapter, by the contents list ------------------------------------------------------


def test_every_chapter_by_the_contents_list(watched: Watched) -> None:
    """One page on a phone reaches every chapter through the contents list, the one after the other,
    and each shows its title and "Chapter k of n", its numbers and its NumPy code, on a phone and on a
    tablet, with no sideways scroll. (Opened by its URL, every chapter is checked so by test_layout's walks,
    at 1280×720 and on a phone: each of them opens it by its URL.) The list opens from its button, by
    keyboard too: Escape closes it and gives the focus back to the button, Enter opens it again."""
    w = watched
    w.page.set_viewport_size(dict(zip(("width", "height"), VIEWPORTS["phone"], strict=True)))
    w.goto("?chapter=steps")
    for k, chapter in enumerate(CHAPTERS):
        if not written(chapter):
            continue  # the page says "coming" (test_a_chapter_that_fails_to_load_says_coming)
        w.page.get_by_test_id("chapters-toggle").click()
        if k == 1:  # once: the keyboard closes and opens the list
            expect(w.page.get_by_test_id("chapters-toggle")).to_have_attribute("aria-expanded", "true")
            w.page.keyboard.press("Escape")  # closes, and the focus goes back to the button
            expect(w.page.get_by_test_id("contents")).to_be_hidden()
            expect(w.page.get_by_test_id("chapters-toggle")).to_be_focused()
            w.page.keyboard.press("Enter")
            expect(w.page.get_by_test_id("contents")).to_be_visible()
        link = w.page.get_by_test_id(f"chapter-link-{chapter}")
        expect(link).to_be_visible()
        link.click()
        ready(w, chapter=chapter)
        expect(w.page.get_by_test_id("contents")).to_be_hidden()
        assert query(w).get("chapter", ["steps"]) == [chapter]
        for name in ("phone", "tablet"):
            w.page.set_viewport_size(dict(zip(("width", "height"), VIEWPORTS[name], strict=True)))
            shows_chapter(w, chapter)
            no_sideways_scroll(w)
        w.page.set_viewport_size(dict(zip(("width", "height"), VIEWPORTS["phone"], strict=True)))


def test_a_chapter_that_fails_to_load_says_coming(watched: Watched) -> None:
    w = watched
    # the server has no rnn.js (a chapter being written): its module answers 404
    w.page.route("**/static/js/chapters/rnn.js*", lambda route: route.fulfill(status=404, body="not here"))
    w.expect_console_error("404")
    w.page.goto(f"{w.base}/?chapter=rnn")
    if w.page.locator('script[type="importmap"]').count() == 0:
        pytest.skip("the page is a bundle: its chapters are inside it, none can fail to load")
    ready(w, chapter="rnn")
    expect(w.page.get_by_test_id("chapter-coming")).to_be_visible()
    expect(w.page.get_by_test_id("chapter-title")).to_have_text("Why not an RNN")
    w.page.get_by_test_id("chapters-toggle").click()
    expect(w.page.get_by_test_id("chapter-link-rnn")).to_contain_text("coming")
    w.page.get_by_test_id("chapters-toggle").click()
    w.page.keyboard.press("PageDown")  # the lesson goes on
    ready(w, chapter="projections")
    # an unknown chapter opens the five steps
    w.page.goto(f"{w.base}/?chapter=nonsense")
    ready(w, chapter="steps", step="score")


def test_arrows_stay_in_a_chapter_and_page_keys_walk_the_lesson(watched: Watched) -> None:
    w = watched
    w.goto("?chapter=masks")
    ready(w, chapter="masks", step="full", mask="full")
    for step, mask in (("causal", "causal"), ("weights", "causal"), ("difference", "causal")):
        w.page.keyboard.press("ArrowRight")
        ready(w, chapter="masks", step=step, mask=mask)
    assert query(w)["step"] == ["difference"]
    w.page.keyboard.press("ArrowRight")  # the chapter's last step stays
    ready(w, chapter="masks", step="difference")
    expect(w.page.get_by_test_id("next-step")).to_be_disabled()
    # causal: "cat" splits 50/50 (weights step, by URL)
    w.page.goto(f"{w.base}/?chapter=masks&step=weights&focus=1")
    ready(w, chapter="masks", step="weights", mask="causal")
    assert w.row(1) == [0.5, 0.5, 0, 0, 0]

    # PageUp from the first step of masks goes to the last step of the chapter before it
    w.page.goto(f"{w.base}/?chapter=masks&step=full")
    ready(w, chapter="masks", step="full")
    w.page.keyboard.press("PageUp")
    before = CHAPTERS[CHAPTERS.index("masks") - 1]
    ready(w, chapter=before)
    if written(before):
        last = w.page.locator("#step-list button").last.get_attribute("data-step")
        ready(w, chapter=before, step=last or "")
    # PageDown from steps' last step: the next chapter; PageUp: back to "mix"
    w.goto("?step=mix")
    ready(w, chapter="steps", step="mix")
    w.page.keyboard.press("PageDown")
    ready(w, chapter="scaling")
    assert query(w)["chapter"] == ["scaling"]
    w.page.keyboard.press("PageUp")
    ready(w, chapter="steps", step="mix")
    w.page.keyboard.press("PageUp")
    ready(w, chapter="steps", step="softmax")


# ---- the NumPy panel ---------------------------------------------------------------------------


@pytest.mark.parametrize("mask", ["full", "causal"])
def test_the_numpy_panel_of_steps_runs_and_agrees_with_the_api(watched: Watched, mask: str) -> None:
    w = watched
    answer = post(w.base, "/api/attention", {**SEED_INPUT, "mask": mask}, timeout=30)
    stage = {"score": "scores", "scale": "scaled", "mask": "masked", "softmax": "weights", "mix": "output"}
    w.goto(f"?step=score&mask={mask}&focus=3")
    for i, step in enumerate(stage):
        if i:
            w.page.keyboard.press("ArrowRight")
        ready(w, step=step, mask=mask)
        out = run_python(w.text("numpy-code"), timeout=60)
        assert out["step"] == step
        assert close(out[stage[step]], answer[stage[step]]), f"{step}/{mask}: {out} vs the API"


def test_the_numpy_panel_of_masks_runs_and_agrees_with_the_api(watched: Watched) -> None:
    w = watched
    full = post(w.base, "/api/attention", {**SEED_INPUT, "mask": "full"}, timeout=30)
    causal = post(w.base, "/api/attention", {**SEED_INPUT, "mask": "causal"}, timeout=30)
    w.goto("?chapter=masks&step=full")
    ready(w, chapter="masks", step="full")
    assert close(run_python(w.text("numpy-code"), timeout=60)["masked"], full["masked"])
    w.page.keyboard.press("ArrowRight")
    ready(w, chapter="masks", step="causal", mask="causal")
    assert close(run_python(w.text("numpy-code"), timeout=60)["masked"], causal["masked"])
    w.page.keyboard.press("ArrowRight")
    ready(w, chapter="masks", step="weights")
    assert close(run_python(w.text("numpy-code"), timeout=60)["weights"], causal["weights"])
    w.page.keyboard.press("ArrowRight")
    ready(w, chapter="masks", step="difference")
    out = run_python(w.text("numpy-code"), timeout=60)
    assert close(out["full"], full["weights"]) and close(out["causal"], causal["weights"])
    pairs = zip(causal["weights"], full["weights"], strict=True)
    change = [[c - f for c, f in zip(rc, rf, strict=True)] for rc, rf in pairs]
    assert close(out["change"], change)
    # the panel's code is what the Copy button puts on the clipboard
    w.page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=w.base)
    w.page.get_by_test_id("numpy-copy").click()
    expect(w.page.get_by_test_id("numpy-status")).to_contain_text("Copied")
    assert w.page.evaluate("navigator.clipboard.readText()") == w.text("numpy-code")


def test_the_numpy_panel_follows_edits(watched: Watched) -> None:
    w = watched
    w.goto("?step=softmax&focus=3")
    cell = w.page.get_by_test_id("edit-q-3-0")
    cell.fill("1")
    w.wait_ready(step="softmax")
    q = [[1.5, 0], [0, 1.2], [1.2, 0], [1, 0], [0, 1.5]]  # "its" now asks with [1, 0]
    edited = {**SEED_INPUT, "q": q}
    answer = post(w.base, "/api/attention", {**edited, "mask": "full"}, timeout=30)
    expect(w.page.get_by_test_id("numpy-code")).to_contain_text("[1, 0]")
    assert close(run_python(w.text("numpy-code"), timeout=60)["weights"], answer["weights"])


# ---- predict first -------------------------------------------------------------------------------


def test_predict_first_holds_the_weights_until_a_guess(watched: Watched) -> None:
    w = watched
    w.goto("?step=mask&focus=3")
    w.page.get_by_test_id("predict-toggle").check()
    assert query(w)["predict"] == ["1"]
    w.page.keyboard.press("ArrowRight")
    ready(w, step="softmax", predict="waiting")
    expect(w.page.get_by_test_id("predict-prompt")).to_contain_text("“its”")
    assert w.number("cell-3-1") == pytest.approx(4.243)  # the scores still, not the weights
    w.page.get_by_test_id("predict-key-4").click()  # "fish"
    ready(w, step="softmax", predict="true")
    result = w.text("predict-result")
    assert "“fish”" in result and "0.053" in result and "“cat” (0.895)" in result and "number 2 of 5" in result
    assert w.number("cell-3-1") == pytest.approx(0.895)
    w.page.keyboard.press("ArrowRight")  # one guess serves the mix step too
    ready(w, step="mix", predict="true")
    # another word asks again; a column of the table is a guess
    w.page.keyboard.press("2")
    ready(w, focus=1, predict="waiting")
    w.page.get_by_test_id("col-2").click()  # "cat" looks most at "ate" (0.738)
    ready(w, focus=1, predict="true")
    assert "right, it gets 0.738" in w.text("predict-result")
    # under the causal mask, a hidden key is not offered
    w.page.keyboard.press("m")
    ready(w, mask="causal", predict="waiting")
    assert w.page.locator("#predict-keys button").count() == 2


def test_predict_first_from_the_url(watched: Watched) -> None:
    w = watched
    w.goto("?step=softmax&focus=3&predict=1")
    ready(w, predict="waiting")
    expect(w.page.get_by_test_id("predict-toggle")).to_be_checked()


def test_the_numpy_panel_of_a_real_sentence_runs_and_agrees_with_the_api(watched: Watched) -> None:
    w = watched
    sentence = "the dog chased its ball"
    w.goto(f"?sentence={sentence.replace(' ', '%20')}&layer=2&head=5&step=softmax&mask=causal&focus=4")
    ready(w, mode="sentence", step="softmax", layer=2, head=5)
    answer = post(w.base, "/api/attention", {"sentence": sentence, "layer": 2, "head": 5, "mask": "causal"}, timeout=30)
    out = run_python(w.text("numpy-code"), timeout=60)
    assert close(out["weights"], answer["weights"], tol=1e-5)
    w.page.keyboard.press("ArrowRight")
    ready(w, mode="sentence", step="mix")
    assert close(run_python(w.text("numpy-code"), timeout=60)["output"], answer["output"], tol=1e-5)


def test_the_lesson_frame_has_no_axe_violations(browser: Any, server: str) -> None:
    from tests.browser.test_axe import AXE

    if not AXE.exists():
        pytest.skip("axe-core is not installed (npm ci)")
    with watched_page(browser, server, viewport={"width": 1280, "height": 720}, bypass_csp=True) as w:
        page = w.page
        for query in ("?step=softmax&focus=3&predict=1", "?chapter=masks&step=difference"):
            page.goto(server + "/" + query)
            page.wait_for_selector('#app[data-ready="true"]', timeout=20_000)
            page.get_by_test_id("chapters-toggle").click()  # the contents list open
            page.add_script_tag(path=str(AXE))
            tags = "['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']"
            result = page.evaluate(f"() => axe.run(document, {{ runOnly: {{ type: 'tag', values: {tags} }} }})")
            found = [f"{v['id']}: {v['help']} — {v['nodes'][0]['target']}" for v in result["violations"]]
            assert found == [], query
