"""The page's core as a teacher and a student use it (issue 11 items 1, 2, 3, 7, 9, 10, 13; issue 12's
code points), and the view that main.js provides to the classroom and the exports (hub.js)."""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlparse

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched
from tests.browser.test_model_mode import ANIMAL, IT, animal_url

pytestmark = pytest.mark.browser

CAT, ITS = 1, 3


def query(w: Watched) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(w.page.url).query).items()}


def ready(w: Watched, **attrs: str | int) -> None:
    sel = '#app[data-ready="true"]' + "".join(f'[data-{k}="{v}"]' for k, v in attrs.items())
    w.page.wait_for_selector(sel, timeout=30_000)


def test_the_page_opens_on_its(watched: Watched) -> None:  # issue 11, item 3
    w = watched
    w.goto()
    ready(w, step="score", focus=ITS)
    expect(w.page.locator("#matrix tbody tr.focused")).to_have_attribute("data-row", str(ITS))
    assert w.text("num-focus") == "“its”"
    assert query(w)["focus"] == str(ITS)
    # a focus in the URL wins
    w.goto("?focus=0")
    ready(w, focus=0)


def test_the_mix_sentence_follows_what_the_word_attended_to(watched: Watched) -> None:  # item 1
    w = watched
    w.goto(f"?step=mix&focus={ITS}")
    ready(w, step="mix")
    assert "“its” gives 0.895 of its attention to “cat”" in w.text("step-text")
    w.goto(f"?step=mix&mask=causal&focus={CAT}")
    ready(w, step="mix", mask="causal")
    text = w.text("step-text")
    assert "“cat” splits its attention between “the” (0.500) and “cat” (0.500)" in text
    assert "“its”" not in text
    w.page.keyboard.press("1")  # "the" under the causal mask sees only itself
    ready(w, focus=0)
    assert "“the” attends mostly to itself (1.000)" in w.text("step-text")


def test_the_mix_sentence_in_sentence_mode(watched: Watched) -> None:  # item 1, a real sentence
    w = watched
    w.goto(animal_url(layer=3, head=1, step="mix", focus=IT))
    ready(w, step="mix", mode="sentence", focus=IT)
    text = w.text("step-text")
    assert "“it” gives 0.677 of its attention to “animal”" in text, text
    w.page.get_by_test_id("layer-select").select_option("1")  # layer 1, head 0: "it" rests on [CLS]
    w.page.get_by_test_id("head-select").select_option("0")
    ready(w, step="mix", layer=1, head=0)
    assert "“it” gives 0.772 of its attention to “[CLS]”, a special token" in w.text("step-text")


def test_removing_an_earlier_word_keeps_the_focus_on_its_word(watched: Watched) -> None:  # item 2
    w = watched
    w.goto(f"?focus={ITS}")
    ready(w, focus=ITS)
    w.page.locator('#editor-grids button[data-remove="1"]').click()  # remove "cat"
    ready(w, focus=ITS - 1)
    expect(w.page.locator("#matrix tbody tr.focused")).to_have_attribute("data-row", str(ITS - 1))
    assert w.text("num-focus") == "“its”"
    assert query(w)["focus"] == str(ITS - 1)
    expect(w.page.get_by_test_id(f"row-{ITS - 1}")).to_contain_text("its")
    # removing a later word leaves it where it is
    w.page.locator('#editor-grids button[data-remove="3"]').click()  # "fish"
    ready(w, focus=ITS - 1)
    assert w.text("num-focus") == "“its”"


def test_overview_click_brings_the_view_into_sight_and_keys_work_after_the_checkbox(watched: Watched) -> None:
    w = watched  # items 7 and 9
    w.goto(animal_url(layer=3, head=1, step="softmax", focus=IT))
    ready(w, mode="sentence", layer=3, head=1)
    thumb = w.page.get_by_test_id("head-5-7")
    thumb.scroll_into_view_if_needed()
    thumb.click()
    ready(w, layer=5, head=7)
    top = w.page.evaluate("document.getElementById('workspace').getBoundingClientRect().top")
    assert -5 <= top < w.page.viewport_size["height"] / 2, f"the view is at {top} px"
    # item 9: after clicking the Merge checkbox, → and M still work
    w.page.get_by_test_id("merge-toggle").click()
    expect(w.page.get_by_test_id("merge-toggle")).to_be_checked()
    w.page.keyboard.press("ArrowRight")
    ready(w, step="mix")
    w.page.keyboard.press("m")
    ready(w, mask="causal")
    # but a text field keeps its keys
    w.page.get_by_test_id("sentence-input").focus()
    w.page.keyboard.press("ArrowLeft")
    w.page.keyboard.press("m")
    assert w.page.locator("#app").get_attribute("data-step") == "mix"


def test_back_and_forward_between_the_views_a_user_returns_to(watched: Watched) -> None:  # item 10
    w = watched
    w.goto()
    ready(w, mode="example", focus=ITS)
    start = len(w.page.evaluate("location.href"))
    assert start
    w.page.keyboard.press("ArrowRight")  # steps replace the entry, they do not add one
    ready(w, step="scale")
    w.page.get_by_test_id("sentence-input").fill("the dog chased its ball")
    w.page.get_by_test_id("sentence-go").click()
    ready(w, mode="sentence")
    w.page.keyboard.press("ArrowRight")
    ready(w, mode="sentence", step="mask")
    w.page.go_back()  # back to the example as it was left (not to the previous step)
    ready(w, mode="example", step="scale", focus=ITS)
    assert query(w)["example"] == "the-cat-ate-its-fish"
    w.page.go_forward()
    ready(w, mode="sentence", step="mask")
    assert query(w)["sentence"] == "the dog chased its ball"
    # a chapter is a view of its own
    w.page.get_by_test_id("chapters-toggle").click()
    w.page.get_by_test_id("chapter-link-masks").click()
    ready(w, chapter="masks")
    w.page.go_back()
    ready(w, chapter="steps", mode="sentence", step="mask")
    w.page.go_back()
    ready(w, chapter="steps", mode="example")


def test_empty_sentence_and_empty_word_name_say_why(watched: Watched) -> None:  # item 13
    w = watched
    w.goto()
    w.page.get_by_test_id("sentence-input").fill("    ")
    w.page.get_by_test_id("sentence-go").click()
    expect(w.page.get_by_test_id("error-banner")).to_contain_text("only spaces")
    assert w.page.locator("#app").get_attribute("data-mode") == "example"
    w.page.get_by_test_id("edit-token-1").fill("")
    expect(w.page.get_by_test_id("error-tokens")).to_contain_text("Word 2 has no name")
    expect(w.page.get_by_test_id(f"row-{CAT}")).to_contain_text("cat")  # the last good drawing stays
    w.page.get_by_test_id("edit-token-1").fill("dog")
    ready(w)
    expect(w.page.get_by_test_id(f"row-{CAT}")).to_contain_text("dog")
    expect(w.page.get_by_test_id("error-banner")).to_be_hidden()


def test_merged_words_are_sliced_by_code_points(watched: Watched) -> None:  # issue 12
    w = watched
    sentence = "🍕 unbelievably good"
    w.goto(f"?sentence={quote(sentence)}&merge=1&step=softmax&focus=1")
    ready(w, mode="sentence", step="softmax")
    headers = [w.page.get_by_test_id(f"col-{j}").inner_text().strip() for j in range(5)]
    assert headers == ["[CLS]", "🍕", "unbelievably", "good", "[SEP]"], headers


# ---- hub.js: the view for the classroom and the exports ----------------------------------------


CURRENT = """(() => { const d = {}; document.dispatchEvent(new CustomEvent('attention:current', { detail: d }));
    return d.view; })()"""


def apply_view(w: Watched, params: dict[str, str]) -> None:
    """hub.js applyViewState(params), through its DOM event (the page may be a bundle)."""
    w.page.evaluate(
        """(p) => { const d = { ...p }; document.dispatchEvent(new CustomEvent('attention:apply', { detail: d }));
            return d.done.then(() => true); }""",
        params,
    )


def test_the_hub_gives_the_view_and_follows_it(watched: Watched) -> None:
    w = watched
    w.goto(f"?step=softmax&focus={ITS}")
    ready(w, step="softmax")
    view = w.page.evaluate(
        CURRENT.replace(
            "return d.view;",
            """const v = d.view; const c = v.renderScene(2);
            return { tokens: v.tokens, w: v.answer.weights[3][1], stage: v.stage, title: v.title, chapter: v.chapter,
                     step: v.step, focus: v.focus, cw: c.width, w0: v.canvas.width, code: v.code.length };""",
        )
    )
    assert view["tokens"] == ["the", "cat", "ate", "its", "fish"] and view["stage"] == "weights"
    assert view["chapter"] == "steps" and view["step"] == "softmax" and view["focus"] == ITS
    assert view["w"] == pytest.approx(0.895, abs=5e-4)
    assert view["title"].startswith("4. Softmax")
    assert view["cw"] == 2 * view["w0"] and view["code"] > 100
    # every change of the view is told, with the view as URL parameters
    listen = "window.__seen = []; document.addEventListener('attention:view', (e) => window.__seen.push(e.detail))"
    w.page.evaluate(listen)
    w.page.keyboard.press("ArrowRight")
    ready(w, step="mix")
    seen = w.page.evaluate("window.__seen")
    assert seen and seen[-1]["step"] == "mix" and seen[-1]["chapter"] == "steps" and seen[-1]["focus"] == str(ITS)
    # applyViewState: no reload, no history entry
    length = w.page.evaluate("history.length")
    apply_view(w, {"chapter": "masks", "step": "weights", "focus": "1", "mask": "causal"})
    ready(w, chapter="masks", step="weights", focus=1, mask="causal")
    assert w.row(CAT) == [0.5, 0.5, 0, 0, 0]
    assert w.page.evaluate("history.length") == length
    assert w.page.evaluate("Array.isArray(window.__seen)")  # the same page: no reload
    target = {"chapter": "steps", "sentence": ANIMAL, "layer": "3", "head": "1", "step": "softmax", "focus": str(IT)}
    apply_view(w, target)
    ready(w, chapter="steps", mode="sentence", layer=3, head=1, focus=IT)
    assert w.page.evaluate("history.length") == length
    # another chapter: its own view
    apply_view(w, {"chapter": "scaling"})
    ready(w, chapter="scaling")
    assert w.page.evaluate(CURRENT.replace("return d.view;", "return d.view.chapter;")) == "scaling"
