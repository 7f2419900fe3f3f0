"""The page's contracts for the classroom (issue 17), in real headless Chromium, through the DOM
events of pageview.js: withholding (nothing derived from the weights on the page: numbers panel,
arithmetic, table, 3D link widths and labels, exports), the room snapshot (every kind of state,
applied before and after the page's own first answer: late joiners), and reframe()."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched, watched_page

pytestmark = pytest.mark.browser

ITS, CAT = 3, 1
ANIMAL = "The animal didn't cross the street because it was too tired."
WEIGHTS_OF_ITS = ["0.895", "0.053", "0.026"]  # "its" under the full mask: cat, fish, its (as the page prints them)

SNAPSHOT = """(() => { const d = {}; document.dispatchEvent(new CustomEvent('attention:snapshot', { detail: d }));
    return d.snapshot; })()"""
CURRENT = """(() => { const d = {}; document.dispatchEvent(new CustomEvent('attention:current', { detail: d }));
    const v = d.view; return { weights: v.answer && 'weights' in v.answer, output: v.answer && 'output' in v.answer,
    answers: v.answers, withheld: v.withheld, stage: v.stage }; })()"""


def withhold(w: Watched, reason: str | None) -> None:
    w.page.evaluate(
        "(r) => document.dispatchEvent(new CustomEvent('attention:withhold', { detail: r ? { reason: r } : {} }))",
        reason,
    )


_SHOWN_WHEN_WITHHELD = """([reason, selector, readyAt, readyText]) => new Promise((done) => {
  const shown = () =>
    [...document.querySelectorAll(selector)].filter((e) => e.style.display !== 'none').map((e) => e.textContent);
  const ready = () => document.querySelector(readyAt)?.innerText.includes(readyText ?? '');
  const seen = new MutationObserver(() => {
    if (!ready()) return;
    seen.disconnect();
    queueMicrotask(() => done(shown())); // the redraw's task over (its microtasks too), before any frame
  });
  seen.observe(document.body, { childList: true, subtree: true, characterData: true });
  document.dispatchEvent(new CustomEvent('attention:withhold', { detail: { reason } }));
})"""


def shown_when_withheld(
    w: Watched, reason: str, selector: str, ready_at: str, ready_text: str | None = None
) -> list[str]:
    """Withholds for `reason`; the texts of the elements of `selector` shown once the page says so (an
    element of `ready_at` appears, holding `ready_text`) and the redraw's task is over, before any
    frame: a label left for a later frame is among them."""
    texts: list[str] = w.page.evaluate(_SHOWN_WHEN_WITHHELD, [reason, selector, ready_at, ready_text])
    return texts


def apply(w: Watched, params: dict[str, str]) -> None:
    w.page.evaluate(
        """(p) => { const d = { ...p }; document.dispatchEvent(new CustomEvent('attention:apply', { detail: d }));
            return d.done.then(() => true); }""",
        params,
    )


def link_widths(w: Watched) -> list[float]:
    w.page.wait_for_selector('#scene[data-animating="false"]')
    text = w.page.get_by_test_id("scene").get_attribute("data-link-widths") or ""
    return [float(x) for x in text.split()]


def weight_texts(w: Watched) -> list[str]:
    """Every weight of "its" found in what the page shows as text (3D labels included)."""
    shown: str = w.page.evaluate(
        "document.querySelector('#main').innerText + ' ' + [...document.querySelectorAll('.label-layer .label')]"
        ".filter((e) => e.getClientRects().length && getComputedStyle(e).display !== 'none')"
        ".map((e) => e.textContent).join(' ')"
    )
    return [x for x in WEIGHTS_OF_ITS if x in shown]


@pytest.mark.parametrize("step", ["softmax", "mix"])
def test_withheld_shows_nothing_derived_from_the_weights(watched: Watched, step: str) -> None:
    w = watched
    w.goto(f"?step={step}&focus={ITS}")
    assert "0.895" in w.text("lesson-numbers") and len(set(link_widths(w))) > 1
    withhold(w, "quiz")
    w.wait_ready(withheld="quiz")
    expect(w.page.get_by_test_id("withheld-note")).to_contain_text("until the teacher reveals")
    assert weight_texts(w) == []  # numbers panel, arithmetic, table, step text, 3D labels
    assert "strongest key" not in w.text("lesson-numbers")
    assert w.number(f"cell-{ITS}-{CAT}") == pytest.approx(4.243)  # the scores: the question's givens
    widths = link_widths(w)
    assert len(widths) == 5 and len(set(widths)) == 1, widths  # every link alike
    assert (
        w.page.locator(".label-layer .label-value").evaluate_all(
            "(ls) => ls.filter((e) => e.getClientRects().length && getComputedStyle(e).display !== 'none').length"
        )
        == 0
    )
    expect(w.page.get_by_test_id("compare")).to_be_hidden()
    assert "weights" not in w.text("numpy-code")
    view = w.page.evaluate(CURRENT)
    assert view["weights"] is False and view["output"] is False and view["answers"] is None
    assert view["withheld"] == {"reason": "quiz"} and view["stage"] == "masked"
    # a focus change or a step change keeps it withheld
    w.page.keyboard.press("2")
    w.wait_ready(focus=1, withheld="quiz")
    assert "0.738" not in w.page.evaluate("document.querySelector('#main').innerText")
    withhold(w, None)
    w.wait_ready(withheld="")
    expect(w.page.get_by_test_id("withheld-note")).to_be_hidden()
    assert "0.738" in w.text("lesson-numbers") and len(set(link_widths(w))) > 1


def test_predict_first_withholds_the_same_way(watched: Watched) -> None:
    w = watched
    w.goto(f"?step=softmax&focus={ITS}&predict=1")
    w.wait_ready(predict="waiting")
    assert weight_texts(w) == []
    assert "strongest key" not in w.text("lesson-numbers")
    widths = link_widths(w)
    assert len(set(widths)) == 1, widths
    w.page.get_by_test_id("predict-key-1").click()
    w.wait_ready(predict="true")
    assert "0.895" in w.text("lesson-numbers") and len(set(link_widths(w))) > 1


def test_withheld_on_a_real_sentence_hides_the_overview(watched: Watched) -> None:
    w = watched
    w.goto(f"?sentence={quote(ANIMAL)}&step=softmax")
    w.wait_ready(mode="sentence")
    withhold(w, "hidden")
    w.wait_ready(withheld="hidden")
    expect(w.page.get_by_test_id("overview")).to_be_hidden()
    expect(w.page.get_by_test_id("withheld-note")).to_contain_text("hidden the numbers")
    assert len(set(link_widths(w))) == 1


SNAPSHOTS = [
    {"chapter": "steps", "example": "the-cat-ate-its-fish", "step": "softmax", "mask": "causal", "focus": "2"},
    {"chapter": "masks", "example": "the-cat-ate-its-fish", "step": "weights", "mask": "full", "focus": "1"},
    {
        "chapter": "steps",
        "sentence": ANIMAL,
        "layer": "2",
        "head": "5",
        "merge": "1",
        "step": "mix",
        "mask": "full",
        "focus": "4",
    },
    {"chapter": "scaling", "step": "scaled", "dk": "256"},
    {"chapter": "projections", "step": "k", "tok": "1"},
]


@pytest.mark.parametrize(
    "snap",
    SNAPSHOTS,
    ids=["focus-mask", "masks-chapter", "sentence-layer-head-merge", "chapter-params", "chapter-token"],
)
@pytest.mark.parametrize("when", ["at-once", "after-first-answer"])
def test_a_late_joiner_gets_every_kind_of_state(browser: Any, server: str, snap: dict[str, str], when: str) -> None:
    """A page that opens with no view of its own (as /?room=CODE does) and is given the room's
    snapshot shows exactly that view, whether it arrives before the page's first answer or after."""
    with watched_page(browser, server) as w:
        w.page.goto(server + "/")
        if when == "after-first-answer":
            w.wait_ready()
        apply(w, snap)
        w.wait_ready(chapter=snap["chapter"])
        w.page.wait_for_timeout(300)  # a first answer still on its way must not move anything
        w.wait_ready(chapter=snap["chapter"])
        got = w.page.evaluate(SNAPSHOT)
        for key, value in snap.items():
            assert got.get(key) == value, (key, got)


OUTSIDE = """(id) => {
  const box = document.getElementById(id).getBoundingClientRect();
  return [...document.querySelectorAll(`#${id} .label-layer > *`)]
    .filter((e) => e.getClientRects().length && getComputedStyle(e).display !== 'none')
    .map((e) => e.getBoundingClientRect())
    .filter((r) => r.right < box.left || r.left > box.right || r.bottom < box.top || r.top > box.bottom).length;
}"""


@pytest.mark.parametrize(("query", "container"), [("?chapter=block", "chapter-stage"), ("?focus=3", "scene")])
def test_reframe_brings_the_drawing_back_into_its_canvas(watched: Watched, query: str, container: str) -> None:
    w = watched
    w.goto(query)
    box = w.page.locator(f"#{container} canvas").bounding_box()
    assert box is not None
    w.page.mouse.move(box["x"] + box["width"] * 0.8, box["y"] + box["height"] * 0.3)
    for _ in range(12):
        w.page.mouse.wheel(0, -600)  # zoomed far in: labels leave the canvas
        w.page.wait_for_timeout(30)
    # polled until it holds (the drawing follows at its next frames, later on a loaded machine)
    w.page.wait_for_function(f"(id) => ({OUTSIDE})(id) > 0", arg=container, timeout=10_000)
    w.page.evaluate("document.dispatchEvent(new CustomEvent('attention:reframe'))")
    w.page.wait_for_function(f"(id) => ({OUTSIDE})(id) === 0", arg=container, timeout=10_000)
