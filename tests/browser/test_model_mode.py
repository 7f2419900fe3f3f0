"""Sentence mode in real headless Chromium against a real server and the real model
(all-MiniLM-L6-v2 run in NumPy): tokens as the model sees them, layer and head pickers, the
overview of all 72 heads, means, merged word pieces, the PCA drawing, the URL, the loading
indicator on a cold model, and typed text that never runs."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, quote, urlparse

import httpx
import numpy as np
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched, running_server, watched_page
from tests.browser.test_page import _changed_pixels

pytestmark = pytest.mark.browser

ANIMAL = "The animal didn't cross the street because it was too tired."
# [CLS] the animal didn ' t cross the street because it was too tired . [SEP]
IT, ANIMAL_TOKEN, N_ANIMAL = 10, 2, 16
SPLIT = "Tokenization is fun."  # [CLS] token ##ization is fun . [SEP]


def query(w: Watched) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(w.page.url).query).items()}


def animal_url(**params: str | int) -> str:
    rest = "".join(f"&{k}={v}" for k, v in params.items())
    return f"?sentence={quote(ANIMAL)}{rest}"


def test_the_animal_sentence_opens_where_it_finds_animal(watched: Watched) -> None:
    w = watched
    w.goto()
    w.page.get_by_test_id("sentence-input").fill(ANIMAL)
    w.page.get_by_test_id("sentence-input").press("Enter")
    # the animal sentence starts on layer 3, head 1, focused on "it"
    w.wait_ready(mode="sentence", layer=3, head=1, focus=IT)
    expect(w.page.get_by_test_id("row-0")).to_contain_text("[CLS]")
    expect(w.page.get_by_test_id(f"row-{N_ANIMAL - 1}")).to_contain_text("[SEP]")
    expect(w.page.get_by_test_id(f"row-{IT}")).to_contain_text("it")
    expect(w.page.get_by_test_id("layer-select")).to_have_value("3")
    expect(w.page.get_by_test_id("head-select")).to_have_value("1")

    # the score step shows a 32-term dot product in short
    assert re.search(r"… \(32 terms\) = −?\d", w.text(f"arith-{ANIMAL_TOKEN}"))
    w.page.get_by_test_id("step-softmax").click()
    w.wait_ready(step="softmax")
    assert w.number(f"cell-{IT}-{ANIMAL_TOKEN}") == pytest.approx(0.68, abs=0.005)
    assert w.number(f"rowsum-{IT}") == 1.0
    expect(w.page.get_by_test_id(f"link-label-{ANIMAL_TOKEN}")).to_have_text(w.text(f"cell-{IT}-{ANIMAL_TOKEN}"))
    assert query(w) == {
        "sentence": ANIMAL,
        "layer": "3",
        "head": "1",
        "step": "softmax",
        "mask": "full",
        "focus": str(IT),
    }

    # the drawing is a PCA, and the screen says how much of the variance it keeps
    note = w.text("scene-note")
    shown = re.search(r"PCA over this head's queries and keys: the first two components explain (\d+) %", note)
    assert shown
    # the page's PCA (in JS) agrees with NumPy's on the same q and k
    api = w.page.request.post(w.base + "/api/attention", data={"sentence": ANIMAL, "layer": 3, "head": 1}).json()
    qk = np.array(api["q"] + api["k"])
    variances = np.linalg.eigvalsh(np.cov(qk, rowvar=False))[::-1]
    assert int(shown.group(1)) == round(100 * variances[:2].sum() / variances.sum())
    # the full vectors' numbers: the focused word's, then the hovered cell's
    info = w.page.get_by_test_id("vector-info")
    expect(info).to_contain_text("q of “it”")
    expect(info).to_contain_text("32 numbers")
    w.page.get_by_test_id(f"cell-{IT}-{ANIMAL_TOKEN}").hover()
    expect(info).to_contain_text("k of “animal”")
    w.page.locator(f'#scene button.label[data-focus="{ANIMAL_TOKEN}"]').hover()  # a word in the 3D view
    expect(info).to_contain_text("hovered word's")
    expect(info).to_contain_text("v of “animal”")

    # the one-click example gives the same view from anywhere
    w.page.get_by_test_id("example-select").select_option("the-cat-ate-its-fish")
    w.wait_ready(mode="example")
    expect(w.page.get_by_test_id("model-bar")).to_be_hidden()
    w.page.get_by_test_id("animal-go").click()
    w.wait_ready(mode="sentence", layer=3, head=1, focus=IT)


def test_url_round_trip_and_pickers(watched: Watched) -> None:
    w = watched
    w.goto(animal_url(layer=3, head=1, step="softmax", focus=IT))
    w.wait_ready(mode="sentence", layer=3, head=1, step="softmax", focus=IT)
    assert w.number(f"cell-{IT}-{ANIMAL_TOKEN}") == pytest.approx(0.68, abs=0.005)
    expect(w.page.get_by_test_id("sentence-input")).to_have_value(ANIMAL)

    w.page.get_by_test_id("layer-select").select_option("5")
    w.page.get_by_test_id("head-select").select_option("11")
    w.wait_ready(layer=5, head=11)
    assert w.number(f"cell-{IT}-{ANIMAL_TOKEN}") == pytest.approx(0.67, abs=0.005)
    w.page.keyboard.press("ArrowRight")
    w.wait_ready(step="mix")
    url = w.page.url
    assert query(w)["layer"] == "5" and query(w)["head"] == "11" and query(w)["step"] == "mix"

    w.page.goto("about:blank")
    w.page.goto(url)
    w.wait_ready(mode="sentence", layer=5, head=11, step="mix", focus=IT)
    expect(w.page.get_by_test_id("head-select")).to_have_value("11")
    expect(w.page.get_by_test_id("arith-check")).to_contain_text("z = [")

    # steps, the mask and the keyboard work as in the hand-set mode
    w.page.keyboard.press("ArrowLeft")
    w.page.keyboard.press("ArrowLeft")
    w.page.keyboard.press("m")
    w.wait_ready(step="mask", mask="causal")
    assert w.text(f"cell-{IT}-{IT + 1}") == "−∞"
    # the page makes this stage from the full mask's scaled scores: the server's causal numbers, digit for digit
    body = {"sentence": ANIMAL, "layer": 5, "head": 11, "mask": "causal"}
    served = httpx.post(w.base + "/api/attention", json=body, timeout=60).json()["masked"][IT]
    shown = [w.text(f"cell-{IT}-{j}") for j in range(N_ANIMAL)]
    assert shown == [f"{x:.3f}".replace("-", "−") if x is not None else "−∞" for x in served], (shown, served)
    expect(w.page.get_by_test_id("model-note")).to_contain_text("recomputes")
    # the overview follows the mask: under causal, no query sees a later key (the lightest
    # colour above the diagonal; under full, this head gives a later key up to 0.358)
    w.page.wait_for_function(
        """() => {
            const c = document.querySelector('[data-testid="head-0-0"] canvas');
            if (!c) return false;
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            for (let i = 0; i < c.height; i++) {
                for (let j = i + 1; j < c.width; j++) {
                    const o = 4 * (i * c.width + j);
                    if (d[o] !== 0xfe || d[o + 1] !== 0xe8 || d[o + 2] !== 0x38) return false;
                }
            }
            return true;
        }"""
    )
    w.page.keyboard.press("ArrowRight")
    w.wait_ready(step="softmax", mask="causal")
    assert w.number(f"cell-{IT}-{IT + 1}") == 0
    assert w.number(f"rowsum-{IT}") == 1.0
    w.page.keyboard.press("3")
    w.wait_ready(focus=2)

    # another sentence keeps the head being looked at, to compare sentences
    w.page.get_by_test_id("sentence-input").fill("The trophy didn't fit in the suitcase because it was too big.")
    w.page.get_by_test_id("sentence-input").press("Enter")
    w.wait_ready(layer=5, head=11, focus=1)
    expect(w.page.get_by_test_id("row-2")).to_contain_text("trophy")


def test_overview_of_every_head(watched: Watched) -> None:
    w = watched
    w.goto(animal_url(layer=3, head=1, step="softmax", focus=IT))
    grid = w.page.get_by_test_id("overview-grid")
    expect(grid).to_have_attribute("data-count", "72")
    expect(grid.locator(".ov-cell:not(.ov-mean)")).to_have_count(72)
    expect(grid.locator(".ov-cell.ov-mean")).to_have_count(6 + 12 + 1)  # the means, as extra choices
    current = w.page.get_by_role("button", name="layer 3 head 1", exact=True)
    expect(current).to_have_attribute("aria-pressed", "true")
    expect(current).to_have_class(re.compile(r"\bcurrent\b"))

    # the heatmaps are drawn: a canvas of n × n pixels, not all one colour
    colours = w.page.evaluate(
        """() => {
            const c = document.querySelector('[data-testid="head-3-1"] canvas');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            const seen = new Set();
            for (let i = 0; i < d.length; i += 4) seen.add(d[i] * 65536 + d[i + 1] * 256 + d[i + 2]);
            return [c.width, seen.size];
        }"""
    )
    assert colours[0] == N_ANIMAL and colours[1] > 5

    w.page.get_by_role("button", name="layer 5 head 11", exact=True).click()
    w.wait_ready(layer=5, head=11)
    assert query(w)["layer"] == "5" and query(w)["head"] == "11"
    expect(w.page.get_by_role("button", name="layer 5 head 11", exact=True)).to_have_attribute("aria-pressed", "true")
    expect(current).to_have_attribute("aria-pressed", "false")
    assert w.number(f"cell-{IT}-{ANIMAL_TOKEN}") == pytest.approx(0.67, abs=0.005)

    # the keyboard: one Tab stop (the shown head), arrows move within the grid, Enter picks
    expect(grid.locator('button[tabindex="0"]')).to_have_count(1)
    expect(w.page.get_by_test_id("head-5-11")).to_have_attribute("tabindex", "0")
    w.page.get_by_test_id("head-5-11").focus()
    w.page.keyboard.press("ArrowUp")
    w.page.keyboard.press("Home")
    w.page.keyboard.press("ArrowRight")
    expect(w.page.get_by_test_id("head-4-1")).to_be_focused()
    w.page.keyboard.press("Enter")
    w.wait_ready(layer=4, head=1, step="softmax")  # the arrows did not step the lesson


def test_means_over_heads_and_layers(watched: Watched) -> None:
    w = watched
    w.goto(animal_url(layer=3, head=1, step="softmax", focus=IT))
    w.page.get_by_test_id("head-select").select_option("mean")
    w.wait_ready(layer=3, head="mean")
    assert query(w)["head"] == "mean"
    for i in (0, IT, N_ANIMAL - 1):
        assert w.number(f"rowsum-{i}") == 1.0
    expect(w.page.get_by_test_id("model-note")).to_contain_text("layer 3's heads")
    expect(w.page.get_by_test_id("arith-lines")).to_contain_text("mean")
    # a mean over heads covers its layer's row in the overview
    expect(w.page.locator('[data-testid^="head-3-"].covered')).to_have_count(12)
    expect(w.page.get_by_role("button", name="layer 3, mean of its heads")).to_have_attribute("aria-pressed", "true")

    w.page.get_by_test_id("layer-select").select_option("mean")
    w.wait_ready(layer="mean", head="mean")
    for i in (0, IT, N_ANIMAL - 1):
        assert w.number(f"rowsum-{i}") == 1.0
    expect(w.page.get_by_test_id("model-note")).to_contain_text("all heads of all layers")
    expect(w.page.locator(".ov-cell.covered")).to_have_count(72)
    w.page.get_by_test_id("head-select").select_option("4")
    w.wait_ready(layer="mean", head=4)
    assert w.number(f"rowsum-{IT}") == 1.0
    # the overview's mean row and column pick means too
    w.page.get_by_role("button", name="layer 5, mean of its heads").click()
    w.wait_ready(layer=5, head="mean")
    assert query(w)["layer"] == "5" and query(w)["head"] == "mean"
    assert w.number(f"rowsum-{IT}") == 1.0


def test_merging_word_pieces(watched: Watched) -> None:
    w = watched
    w.goto(f"?sentence={quote(SPLIT)}&layer=2&head=3&step=softmax&focus=3")
    w.wait_ready(mode="sentence", layer=2, head=3, focus=3)
    expect(w.page.get_by_test_id("row-1")).to_contain_text("token")
    expect(w.page.get_by_test_id("row-2")).to_contain_text("##ization")
    pieces = [w.number("cell-3-1"), w.number("cell-3-2")]  # "is" looking at token, ##ization
    rows_2 = [[w.number(f"cell-{i}-0") for i in (1, 2)]]  # the two pieces' rows, as queries

    w.page.get_by_test_id("merge-toggle").check()
    expect(w.page.get_by_test_id("row-1")).to_contain_text("Tokenization")  # as typed
    expect(w.page.get_by_test_id("row-2")).to_contain_text("is")
    expect(w.page.get_by_test_id("row-5")).to_contain_text("[SEP]")
    expect(w.page.get_by_test_id("cell-5-5")).to_be_visible()
    expect(w.page.get_by_test_id("cell-6-6")).to_have_count(0)
    w.wait_ready(focus=3)
    assert query(w)["merge"] == "1"
    # a key word gets the sum of its pieces' weights; a query word the mean of its pieces' rows
    assert w.number("cell-2-1") == pytest.approx(sum(pieces), abs=0.0015)
    assert w.number("cell-1-0") == pytest.approx(sum(rows_2[0]) / 2, abs=0.0015)
    for i in range(6):
        assert w.number(f"rowsum-{i}") == 1.0
    expect(w.page.get_by_test_id("model-note")).to_contain_text("sum of its pieces")
    expect(w.page.get_by_test_id("arith-lines")).to_contain_text("token ##ization")

    # steps before softmax show the model's own tokens, and say why
    w.page.get_by_test_id("step-score").click()
    w.wait_ready(step="score")
    expect(w.page.get_by_test_id("row-2")).to_contain_text("##ization")
    expect(w.page.get_by_test_id("model-note")).to_contain_text("steps 1–3 show the model's own tokens")
    # focus follows the word: "is" (token 3) stays focused through the switch
    expect(w.page.locator("#matrix tbody tr.focused")).to_have_attribute("data-row", "3")


def test_long_sentences_windowed_scene_and_pooled_overview(watched: Watched) -> None:
    w = watched
    sentence = " ".join(["word"] * 70)  # 72 tokens with [CLS] and [SEP]: the overview pools them in blocks
    w.goto(f"?sentence={quote(sentence)}&step=softmax&focus=40")
    w.wait_ready(mode="sentence", focus=40)
    w.page.wait_for_selector('#overview-grid[data-count="72"]', timeout=20_000)
    size = w.page.evaluate("() => document.querySelector('[data-testid=\"head-2-3\"] canvas').width")
    assert size == 32  # 72 tokens drawn as 32 × 32 blocks
    expect(w.page.get_by_test_id("head-2-3")).to_have_attribute("title", re.compile(r"entropy \d+\.\d\d bits"))
    expect(w.page.get_by_test_id("scene-note")).to_contain_text("shows 32 of the 72 rows")
    # the table draws the 64 rows and columns around the focus; Σ row still counts every key
    expect(w.page.get_by_test_id("cell-71-71")).to_be_visible()
    expect(w.page.get_by_test_id("cell-0-0")).to_have_count(0)
    expect(w.page.locator("#matrix caption")).to_contain_text("rows and columns 9–72 of 72")
    assert w.number("rowsum-40") == 1.0
    assert w.text("arith-lines").count("\n") >= 71  # the focused row's arithmetic has every key

    # more tokens than the model takes: the server's message, shown as it is
    w.expect_console_error("status of 422")
    w.page.get_by_test_id("sentence-input").fill(" ".join(["word"] * 600))
    w.page.get_by_test_id("sentence-go").click()
    # 600 words tokenized and refused, then the page's re-render: over 5 s at a load of 20 on 2 cores
    expect(w.page.get_by_test_id("error-banner")).to_contain_text("512", timeout=15_000)


def test_typed_sentence_never_runs(watched: Watched) -> None:
    w = watched
    w.goto()
    payload = '<img src=/xss onerror="window.__xss=1"><script>window.__xss=2</script>'
    w.page.get_by_test_id("sentence-input").fill(payload)
    w.page.get_by_test_id("sentence-go").click()
    w.wait_ready(mode="sentence")
    w.page.get_by_test_id("merge-toggle").check()
    w.page.get_by_test_id("step-softmax").click()
    w.wait_ready(step="softmax")
    expect(w.page.get_by_test_id("matrix")).to_contain_text("<")
    expect(w.page.get_by_test_id("matrix")).to_contain_text("onerror")
    w.page.goto(w.base + "/?sentence=" + quote(payload) + "&merge=1&step=mix&layer=%3Cb%3E&head=mean")
    w.wait_ready(mode="sentence", head="mean", layer=0)
    assert w.page.evaluate("window.__xss") is None
    assert w.page.locator("#app img, #app script, #app b").count() == 0


def test_the_canvas_is_drawn_in_sentence_mode(watched: Watched) -> None:
    w = watched
    w.goto(animal_url(step="softmax"))
    w.wait_ready(mode="sentence", layer=3, head=1, focus=IT)
    changed, total = _changed_pixels(w)
    assert changed > 0.02 * total, f"only {changed} of {total} pixels differ from the background"
    # a tablet: wide tables scroll inside their boxes, the page itself does not
    w.page.set_viewport_size({"width": 768, "height": 1024})
    w.page.wait_for_function("() => document.getElementById('scene').clientWidth < 768")
    assert w.page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0


@pytest.fixture
def cold(browser: Any) -> Any:
    with running_server() as base, watched_page(browser, base) as w:
        yield w


def test_loading_indicator_on_a_cold_model(cold: Watched) -> None:
    w = cold
    # record every text the status line shows, however briefly (the load takes a second or so)
    w.page.add_init_script(
        """(() => {
            window.__status = [];
            new MutationObserver(() => {
                const s = document.getElementById('model-status');
                if (s && !s.hidden && s.textContent) window.__status.push(s.textContent);
            }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
        })();"""
    )
    # the sentence's own requests wait until the page has had its first look at the model: sent
    # at once, they can load it (a second or less) before that look is answered, and the page
    # then rightly has no loading to show
    held: list[Any] = []
    looked = False

    def hold(route: Any) -> None:
        if looked:
            route.continue_()
        else:
            held.append(route)

    w.page.route("**/api/attention", hold)
    with w.page.expect_response(lambda r: urlparse(r.url).path == "/api/model"):
        w.page.goto(w.base + "/" + animal_url())
    looked = True
    for route in held:
        route.continue_()
    w.wait_ready(mode="sentence", layer=3, head=1)
    seen: list[str] = w.page.evaluate("window.__status")
    assert any("Loading the model" in s for s in seen), seen
    expect(w.page.get_by_test_id("model-status")).to_be_hidden()
    assert w.number(f"cell-{IT}-{ANIMAL_TOKEN}") != 0
