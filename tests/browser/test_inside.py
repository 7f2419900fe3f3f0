"""Looking inside a real model, in headless Chromium: a head switched off in the overview of the page
(the candidates before and after read from the page, as POST /api/ablate gives them; the set in the
URL and back from it), the chapter `inside` step by step (rollout's numbers as the server's, the NumPy
panel run in a plain Python, a head switched off in its grid, the lens, the compare view in its modes
and in a room's snapshot), axe on three steps. Every step on the first screen at 1280×720, on a phone and
on the projector: test_layout's and test_projector's walks of every chapter."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.chapters import ANIMAL, num, open_at_step, wait
from tests.browser.conftest import Watched, watched_page
from tests.browser.helpers import (
    chapter_violations,
    fewest_labels,
    labels_shown,
    next_frames,
    post,
    run_python,
    watch_labels,
)
from tests.browser.test_projector import TOKEN
from tests.browser.test_withhold import shown_when_withheld, withhold

pytestmark = pytest.mark.browser

STEPS = ["rollout", "flow", "off", "lens", "compare"]
PROMPT = "The capital of France is"
DECODER = "smollm2-135m"
LONG = ANIMAL + " The farmer beside it sat down on the warm stones."  # 27 tokens: past flow's tables
IT = 10  # "it" in all-MiniLM-L6-v2's tokens of ANIMAL: [CLS] the animal didn ' t cross the street because it …
SNAPSHOT = """() => {
  const d = {};
  document.dispatchEvent(new CustomEvent('attention:snapshot', { detail: d }));
  return d.snapshot;
}"""
SHOTS = os.environ.get("INSIDE_SHOTS")  # a folder: the walks leave their screenshots there, to be looked at


def shot(w: Watched, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        w.page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def pct(p: float) -> str:
    return f"{100 * p:.1f}%"


def query(w: Watched) -> dict[str, list[str]]:
    return parse_qs(urlparse(w.page.url).query)


# ---- the page's overview ------------------------------------------------------------------------


def test_switch_a_head_off_in_the_overview_and_read_the_changed_candidates(watched: Watched) -> None:
    w = watched
    w.page.set_viewport_size({"width": 1280, "height": 720})
    w.goto(f"?sentence={PROMPT.replace(' ', '+')}&model={DECODER}&layer=29&head=0")
    w.page.wait_for_selector('[data-testid="head-23-4"]', timeout=120_000)
    w.page.get_by_test_id("heads-off-switch").click()
    expect(w.page.get_by_test_id("heads-off-switch")).to_have_attribute("aria-pressed", "true")
    w.page.get_by_test_id("head-23-4").click()  # a click now switches the head off: it does not pick it
    w.page.wait_for_selector('[data-testid="heads-off-results"][data-ready="true"]', timeout=60_000)
    assert w.page.locator("#app").get_attribute("data-layer") == "29"
    assert "off" in (w.page.get_by_test_id("head-23-4").get_attribute("class") or "")
    assert "switched off" in (w.page.get_by_test_id("head-23-4").get_attribute("aria-label") or "")
    assert query(w)["off"] == ["23.4"]

    api = post(
        w.base, "/api/ablate", {"model": DECODER, "sentence": PROMPT, "heads": [[23, 4]], "layer": 29, "head": 0}
    )
    before, after = api["candidates"]["before"], api["candidates"]["after"]
    for i in range(10):
        row = w.page.get_by_test_id(f"heads-off-candidate-{i}").locator("td").all_inner_texts()
        assert row == [f"“{before[i]['token']}”", pct(before[i]["p"]), f"“{after[i]['token']}”", pct(after[i]["p"])]
    paris = next(c["p"] for c in after if c["token"] == " Paris")
    assert before[0]["token"] == " Paris" and before[0]["p"] - paris > 0.4  # this head carries most of "Paris"
    winner = w.text("heads-off-winner")
    assert f"at {pct(before[0]['p'])}" in winner and f"has {pct(paris)}" in winner
    assert f"{min(api['cosine']):.4f}" in w.text("heads-off-cosine")
    shot(w, "inside-overview-off")

    # the set is in the URL: a reload (or a follower's snapshot) shows the same, and "All heads on" clears it
    w.page.reload()
    w.page.wait_for_selector('[data-testid="heads-off-results"][data-ready="true"]', timeout=120_000)
    assert w.page.get_by_test_id("heads-off-candidate-0").locator("td").nth(3).inner_text() == pct(after[0]["p"])
    w.page.get_by_test_id("heads-off-clear").click()
    expect(w.page.get_by_test_id("heads-off-results")).to_be_empty()
    assert "off" not in query(w)
    w.page.get_by_test_id("head-5-1").click()  # the switch is off again: a click picks the head
    w.wait_ready(layer=5, head=1)


def test_an_encoder_head_off_shows_the_cosines_and_a_later_head(watched: Watched) -> None:
    w = watched
    w.goto(f"?sentence={ANIMAL.replace(' ', '+')}&layer=5&head=3&off=1.2,1.7")
    w.page.wait_for_selector('[data-testid="heads-off-results"][data-ready="true"]', timeout=60_000)
    api = post(w.base, "/api/ablate", {"sentence": ANIMAL, "heads": [[1, 2], [1, 7]], "layer": 5, "head": 3})
    assert "candidates" not in api and w.page.get_by_test_id("heads-off-candidates").count() == 0
    assert f"{min(api['cosine']):.4f}" in w.text("heads-off-cosine")
    most = max(
        abs(x - y)
        for a, b in zip(api["weights"]["before"], api["weights"]["after"], strict=True)
        for x, y in zip(a, b, strict=True)
    )
    assert f"up to {most:.3f}" in w.text("heads-off-view")
    assert "2 heads switched off" in w.text("heads-off-hint")


# ---- the chapter --------------------------------------------------------------------------------


def test_the_chapter_step_by_step(watched: Watched) -> None:
    """One page walk: rollout and flow (the server's shares, the NumPy panel run), a head switched off in the
    chapter's grid (its candidates, the URL, the predict question), then the lens (its marked row)."""
    w = watched
    open_at_step(w, "chapter=inside", (1280, 720), "rollout")
    api = post(w.base, "/api/rollout", {"model": "all-minilm-l6-v2", "sentence": ANIMAL, "focus": IT})
    assert api["tokens"][IT] == "it"
    assert w.page.get_by_test_id("inside-focus").input_value() == str(IT)  # "it" is followed by default
    through = api["focus_paths"]["through"]
    # predict first: the question's options are words of the sentence; before a guess no share but the word's own
    # (no table, no number naming the largest)
    buttons = w.page.locator("[data-testid=inside-ask] button")
    assert buttons.count() == 3
    assert w.text("inside-withheld") == "Rollout's shares show once you have picked your answer below."
    assert w.page.get_by_test_id("inside-rollout-table").count() == 0
    assert w.page.get_by_test_id("inside-share").count() == 0
    assert num(w.text("inside-self")) == pytest.approx(through[0][IT], abs=5e-4)
    others = [k for k in range(len(through[0])) if k != IT and not api["tokens"][k].startswith("[")]
    best = max(others, key=lambda k: through[0][k])
    buttons.nth(0).click()
    assert f"{100 * through[0][best]:.1f}%" in w.text("inside-ask-result")
    for k in (0, 2, IT):  # [CLS], "animal", "it": the input (column 0) and through[3], after layer 2 (column 3)
        assert num(w.text(f"inside-rollout-table-{k}-0")) == pytest.approx(through[0][k], abs=5e-4)
        assert num(w.text(f"inside-rollout-table-{k}-3")) == pytest.approx(through[3][k], abs=5e-4)
    assert num(w.text("inside-share")) == pytest.approx(through[0][best], abs=5e-4)
    # the NumPy panel, run in a plain Python, gives the server's rollout row
    out = run_python(w.page.get_by_test_id("numpy-code").inner_text())
    assert out["focus"] == "it"
    assert out["shares"] == pytest.approx(through[0], abs=2e-6)

    w.page.get_by_test_id("step-flow").click()
    wait(w, "flow")
    flow = post(
        w.base, "/api/rollout", {"model": "all-minilm-l6-v2", "sentence": ANIMAL, "focus": IT, "method": "flow"}
    )
    f = flow["focus_paths"]["through"][0]
    assert num(w.text("inside-flow-table-0-0")) == pytest.approx(f[0], abs=5e-4)
    assert num(w.text("inside-flow-table-0-2")) == pytest.approx(f[0] - through[0][0], abs=1e-3)
    # another token followed: the URL says so, and the shares are the server's for it
    shown = watch_labels(w)
    w.page.get_by_test_id("inside-focus").select_option("2")
    wait(w, "flow")
    next_frames(w.page, 2)
    # the 3D view is made anew for the new token: names on the page all along, the old ones then gone
    assert fewest_labels(w) == min(shown, labels_shown(w)) > 0
    assert query(w)["follow"] == ["2"]
    other = post(
        w.base, "/api/rollout", {"model": "all-minilm-l6-v2", "sentence": ANIMAL, "focus": 2, "method": "flow"}
    )
    assert num(w.text("inside-flow-table-0-0")) == pytest.approx(other["focus_paths"]["through"][0][0], abs=5e-4)
    # a sentence past the 26 tokens of flow's tables: the focus's paths only, and a line that says why
    w.page.get_by_test_id("inside-sentence").fill(LONG)
    w.page.get_by_test_id("inside-sentence").press("Enter")
    w.page.wait_for_selector("[data-testid=inside-flow-note]", timeout=60_000)
    wait(w, "flow")
    long = post(w.base, "/api/rollout", {"model": "all-minilm-l6-v2", "sentence": LONG, "focus": IT, "method": "flow"})
    assert long["layers"] is None and len(long["tokens"]) == 27
    assert "27 tokens" in w.text("inside-flow-note") and "too slow past 26 tokens" in w.text("inside-flow-note")
    assert num(w.text("inside-flow-table-0-0")) == pytest.approx(long["focus_paths"]["through"][0][0], abs=5e-4)

    w.page.get_by_test_id("step-off").click()
    wait(w, "off")
    assert w.text("inside-candidate-0").startswith("“ Paris”\t77.3%")
    w.page.get_by_test_id("inside-head-23-4").click()
    w.page.wait_for_selector('[data-testid="inside-head-23-4"][aria-pressed="true"]', timeout=60_000)
    wait(w, "off")
    assert query(w)["heads"] == ["23.4"]
    api = post(w.base, "/api/ablate", {"model": DECODER, "prompt": PROMPT, "heads": [[23, 4]], "layer": 29, "head": 0})
    paris = next(c["p"] for c in api["candidates"]["after"] if c["token"] == " Paris")
    cells = w.page.get_by_test_id("inside-candidate-0").locator("td").all_inner_texts()
    assert cells[:3] == ["“ Paris”", "77.3%", pct(paris)]
    assert w.text("inside-p-after") == pct(paris)
    assert "layer 23 head 4" in w.text("inside-off")
    # the question: layer 23's head 4 takes the most away (the server's ablations say so)
    w.page.get_by_test_id("inside-ask-1").click()
    assert w.text("inside-ask-result").startswith("Right!")

    w.page.get_by_test_id("step-lens").click()
    wait(w, "lens")
    api = post(w.base, "/api/lens", {"prompt": PROMPT})
    first = api["first_top"]
    # predict first: the question is on the page, no layer's guess (table, 3D names, number, code) until it is answered
    assert_lens_hidden(w, "Every layer's guess shows once you have picked your answer below.")
    assert w.text("inside-ask").startswith("Predict: At which layer does the model first put “Paris” on top?")
    w.page.get_by_test_id(f"inside-ask-{band(first)}").click()
    assert w.text("inside-ask-result").startswith(f"Right! At layer {first}.")
    row = w.page.get_by_test_id(f"inside-lens-{first}")
    assert "inside-first" in (row.get_attribute("class") or "")
    assert row.locator("td").first.inner_text() == "“Paris”"
    assert w.text("inside-first-top") == str(first)
    out = run_python(w.page.get_by_test_id("numpy-code").inner_text())
    assert out["first_top"] == first
    assert w.page.locator("#chapter-stage .bar-label.marked").inner_text().endswith("Paris")
    # a class question open (the quiz withholds): no layer's guess on the page, in its 3D view or its code
    # (its 3D names counted in the redraw's own task: none may wait for a later frame to leave)
    assert shown_when_withheld(w, "quiz", "#chapter-stage .bar-label", "[data-testid=inside-withheld]") == []
    assert_lens_hidden(w, "Every layer's guess is hidden for now: think about your answer first.")
    withhold(w, None)
    w.page.wait_for_selector(f"[data-testid=inside-lens-{first}].inside-first")


def band(layer: int) -> int:
    """The lens question's option for the first layer with the answer on top: 0–9, 10–19, 20–29."""
    return 0 if layer < 10 else 1 if layer < 20 else 2


def assert_lens_hidden(w: Watched, why: str) -> None:
    """No layer's guess on the page: not its table, its 3D names, the first layer's number or the code."""
    assert w.text("inside-withheld") == why
    assert w.page.get_by_test_id("inside-lens-table").count() == 0
    assert w.page.locator("#chapter-stage .bar-label").count() == 0
    assert w.page.get_by_test_id("inside-first-top").count() == 0
    assert "Paris" not in w.page.get_by_test_id("numpy-code").inner_text()


def test_a_class_question_stands_for_the_lens_guess(watched: Watched) -> None:
    """The class's lens question, asked on the step before (the page withholds there), is the guess: when the
    teacher then moves to the lens, every layer's guess shows at once, on the projector and on each phone; a
    new prompt asks again."""
    w = watched
    open_at_step(w, "chapter=inside&step=off", (1280, 720), "off")
    withhold(w, "quiz")
    next_frames(w.page, 2)  # the page drew the step again, withholding
    withhold(w, None)
    w.page.get_by_test_id("step-lens").click()
    wait(w, "lens")
    first = post(w.base, "/api/lens", {"prompt": PROMPT})["first_top"]
    assert "inside-first" in (w.page.get_by_test_id(f"inside-lens-{first}").get_attribute("class") or "")
    assert w.text("inside-first-top") == str(first)
    w.page.get_by_test_id("inside-prompt").fill("The capital of Spain is")
    w.page.get_by_test_id("inside-prompt").press("Enter")
    w.page.wait_for_selector("[data-testid=inside-withheld]", timeout=60_000)
    assert_lens_hidden(w, "Every layer's guess shows once you have picked your answer below.")


def test_in_a_class_the_teacher_decides_what_shows(browser: Any, server: str) -> None:
    """The projector, a phone following it and the teacher's window show each step's answer beside its question
    (the teacher has Ask the class and H to hold it back); a student who leaves to explore alone is asked first."""
    with (
        watched_page(browser, server, viewport={"width": 1280, "height": 720}) as projector,
        watched_page(browser, server, viewport={"width": 390, "height": 844}) as phone,
        watched_page(browser, server, viewport={"width": 1280, "height": 720}) as window,
    ):
        projector.page.goto(f"{server}/?token={TOKEN}&present=1&chapter=inside&step=lens")
        projector.page.wait_for_selector('[data-testid="join-code"]')
        wait(projector, "lens")
        phone.page.goto(f"{server}/?room={projector.text('join-code').strip()}")
        phone.page.wait_for_selector('[data-testid="follow-bar"][data-status="live"][data-following="true"]')
        wait(phone, "lens")
        first = post(server, "/api/lens", {"prompt": PROMPT})["first_top"]
        for w in (projector, phone):
            assert "inside-first" in (w.page.get_by_test_id(f"inside-lens-{first}").get_attribute("class") or "")
            assert w.page.get_by_test_id("inside-withheld").count() == 0
            assert w.page.locator("[data-testid=inside-ask] button").count() == 3  # the question, still asked
        phone.page.get_by_test_id("follow-toggle").click()  # explore alone: the page asks before it answers
        phone.page.wait_for_selector("[data-testid=inside-withheld]")
        assert_lens_hidden(phone, "Every layer's guess shows once you have picked your answer below.")
        window.page.goto(f"{server}/?token={TOKEN}&teacher=1&chapter=inside&step=rollout")
        window.page.wait_for_selector("[data-testid=teacher-panel]")
        wait(window, "rollout")
        assert window.page.get_by_test_id("inside-rollout-table").count() == 1
        assert window.page.get_by_test_id("inside-share").count() == 1


def test_the_compare_view_in_its_modes_the_url_and_a_room(watched: Watched) -> None:
    w = watched
    open_at_step(w, "chapter=inside&step=compare", (1280, 720), "compare")
    wide = ANIMAL.replace("tired", "wide")
    left = post(w.base, "/api/rollout", {"sentence": ANIMAL, "focus": IT})
    a, b = (
        post(w.base, "/api/rollout", {"sentence": s, "focus": IT})["focus_paths"]["through"][0] for s in (ANIMAL, wide)
    )
    # word by word ([CLS], [SEP] left out): "street" is one token of its own in both
    k = left["tokens"].index("street")
    # predict first: no change on the page (table, biggest changes, number, code) until the question is answered
    assert w.text("inside-withheld") == "The change shows once you have picked your answer below."
    assert w.page.get_by_test_id("inside-compare-diff").count() == 0
    assert w.page.get_by_test_id("inside-largest-change").count() == 0
    assert "biggest" not in w.text("chapter-text") and "street" not in w.page.get_by_test_id("numpy-code").inner_text()
    w.page.get_by_test_id("inside-ask-0" if b[k] >= a[k] else "inside-ask-1").click()
    assert w.text("inside-ask-result").startswith("Right!")
    street = w.page.locator("[data-testid=inside-compare-diff] tbody tr", has_text="street")
    cells = street.locator("td").all_inner_texts()
    assert num(cells[0]) == pytest.approx(a[k], abs=5e-4) and num(cells[1]) == pytest.approx(b[k], abs=5e-4)
    assert num(cells[2]) == pytest.approx(b[k] - a[k], abs=1e-3)
    assert w.page.locator("[data-testid=inside-compare-diff] td.ca-hot").count() == 3  # the biggest changes marked
    assert "the biggest:" in w.text("chapter-text")
    out = run_python(w.page.get_by_test_id("numpy-code").inner_text())  # the panel's change, largest three
    assert len(out) == 3 and out["street"] == pytest.approx(b[k] - a[k], abs=2e-6)
    shot(w, "inside-compare")

    # full vs causal: the same tokens, token by token; in the URL and in a room's snapshot
    w.page.get_by_test_id("inside-mode").select_option("masks")
    wait(w, "compare")
    assert query(w)["mode"] == ["masks"]
    full = post(w.base, "/api/rollout", {"sentence": ANIMAL, "focus": IT, "mask": "full"})["focus_paths"]["through"][0]
    causal = post(w.base, "/api/rollout", {"sentence": ANIMAL, "focus": IT, "mask": "causal"})["focus_paths"][
        "through"
    ][0]
    row = w.page.get_by_test_id("inside-compare-diff-0").locator("td").all_inner_texts()  # [CLS]
    assert num(row[0]) == pytest.approx(full[0], abs=5e-4) and num(row[1]) == pytest.approx(causal[0], abs=5e-4)
    # the two biggest changes named under the right stack, and again once the view has a new size
    changes = ("#chapter-stage .label-layer", ".ls-change")
    hot = w.page.get_by_test_id("inside-compare-diff").locator("td.ca-hot").all_inner_texts()  # the 3 biggest
    top = sorted(hot, key=lambda text: -abs(num(text)))[:2]
    named = w.page.locator("#chapter-stage .ls-change")
    assert labels_shown(w, changes) == 2 and sorted(named.all_inner_texts()) == sorted(top)
    w.page.set_viewport_size({"width": 1000, "height": 700})
    next_frames(w.page, 3)
    assert labels_shown(w, changes) == 2 and sorted(named.all_inner_texts()) == sorted(top)
    w.page.set_viewport_size({"width": 1280, "height": 720})
    snap = w.page.evaluate(SNAPSHOT)
    assert snap["chapter"] == "inside" and snap["step"] == "compare" and snap["mode"] == "masks"
    w.page.goto(w.base + "/?" + "&".join(f"{k}={v}" for k, v in snap.items() if k in ("chapter", "step", "mode")))
    wait(w, "compare")
    assert w.page.get_by_test_id("inside-mode").input_value() == "masks"

    # heads on vs off: the focused query's row of the last layer's head, with and without
    w.page.goto(f"{w.base}/?chapter=inside&step=compare&mode=ablation&heads=1.2+3.5")
    wait(w, "compare")
    api = post(
        w.base,
        "/api/ablate",
        {"model": "all-minilm-l6-v2", "sentence": ANIMAL, "heads": [[1, 2], [3, 5]], "layer": 5, "head": 0},
    )
    before, after = api["weights"]["before"][IT], api["weights"]["after"][IT]
    j = max(range(len(before)), key=lambda k: abs(after[k] - before[k]))
    cells = w.page.get_by_test_id(f"inside-compare-diff-{j}").locator("td").all_inner_texts()
    assert num(cells[2]) == pytest.approx(after[j] - before[j], abs=1e-3)
    assert "2 heads off" in w.page.locator("[data-testid=inside-compare-diff] thead").inner_text()


# every step on the first screen at 1280×720, on a phone and on the projector: test_layout's and
# test_projector's walks of every chapter in static/js/chapters/index.js (this one included)


@pytest.mark.parametrize("step", ["off", "lens", "compare"])  # (rollout's tables and pickers: as compare's)
def test_no_accessibility_violations(browser: Any, server: str, step: str) -> None:
    """axe-core at WCAG 2.x A and AA (the heads' grid of buttons, the tables, the pickers), the lens's and the
    compare view's tables shown (a guess made)."""
    guess = None if step == "off" else "inside-ask-0"
    assert chapter_violations(browser, server, f"?chapter=inside&step={step}", guess) == []
