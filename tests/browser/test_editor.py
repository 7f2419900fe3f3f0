"""The editor and the table as a keyboard user and a typist meet them (issue 11, items 8, 11, 12):
focus stays where it was used, messages name cells as the editor shows them, d_k and d_v
apply as they are typed and say why a value is refused."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Watched

pytestmark = pytest.mark.browser

ITS = 3  # "its" in "the cat ate its fish"
CAT = 1


def active_testid(w: Watched) -> str | None:
    testid: str | None = w.page.evaluate("document.activeElement?.dataset?.testid ?? document.activeElement?.tagName")
    return testid


@pytest.mark.parametrize("key", ["Enter", " "])
def test_enter_or_space_on_a_word_keeps_the_focus(watched: Watched, key: str) -> None:
    w = watched
    w.goto("?focus=0")
    w.page.get_by_test_id(f"row-{CAT}").focus()
    w.page.keyboard.press(key)
    w.wait_ready(focus=CAT)
    assert active_testid(w) == f"row-{CAT}"  # the new table's button, not <body>
    # and the next Tab goes on from there, not from the top of the page
    w.page.keyboard.press("Tab")
    assert active_testid(w) == "row-2"


def test_removing_a_word_keeps_the_focus_in_the_editor(watched: Watched) -> None:
    w = watched
    w.goto()
    w.page.locator('#editor-grids button[data-remove="1"]').focus()
    w.page.keyboard.press("Enter")
    expect(w.page.get_by_test_id("cell-3-3")).to_be_visible()
    expect(w.page.get_by_test_id("cell-4-4")).to_have_count(0)
    focused = w.page.evaluate("document.activeElement.dataset.remove")
    assert focused == "1"  # the ✕ of the word that took its place
    # the last word: its ✕ goes, the focus goes to the one before
    w.page.locator('#editor-grids button[data-remove="3"]').focus()
    w.page.keyboard.press("Enter")
    expect(w.page.get_by_test_id("cell-3-3")).to_have_count(0)
    assert w.page.evaluate("document.activeElement.dataset.remove") == "2"


def test_messages_name_cells_as_the_editor_shows_them(watched: Watched) -> None:
    w = watched
    w.goto(f"?focus={ITS}")
    box = w.page.get_by_test_id(f"edit-q-{ITS}-0")
    error = w.page.get_by_test_id("error-q")
    box.fill("abc")
    expect(error).to_contain_text("Q, row “its” (word 4), column 1")
    expect(error).to_contain_text("“abc” is not a number")
    assert "q[3][0]" not in error.inner_text()
    expect(box).to_have_attribute("aria-invalid", "true")

    box.fill("1e999")  # past the largest float: it would travel as null
    expect(error).to_contain_text("1e999 is too large")
    expect(error).to_contain_text("Q, row “its” (word 4), column 1")
    expect(w.page.get_by_test_id(f"cell-{ITS}-{CAT}")).to_have_text("6.000")  # the last good numbers
    box.fill("2")
    expect(error).to_be_hidden()
    expect(box).not_to_have_attribute("aria-invalid", "true")

    # a message only the server can give (an overflow of q·k) still comes through, as written
    w.expect_console_error("status of 422")
    box.fill("1e308")
    expect(error).to_contain_text("overflow")
    box.fill("2")
    expect(error).to_be_hidden()


def test_dk_applies_as_typed_and_says_why_it_refuses(watched: Watched) -> None:
    w = watched
    w.goto(f"?focus={ITS}")
    dk = w.page.get_by_test_id("dk-input")
    message = w.page.get_by_test_id("error-dims")
    for bad in ["0", "99", ""]:
        dk.fill(bad)
        expect(message).to_be_visible()
        expect(message).to_contain_text("d_k must be a whole number from 1 to 8")
        expect(dk).to_have_value(bad)  # not silently reverted
        expect(dk).to_have_attribute("aria-invalid", "true")
        expect(w.page.get_by_test_id(f"edit-q-{ITS}-2")).to_have_count(0)
    dk.fill("3")  # no Enter, no Tab
    expect(w.page.get_by_test_id(f"edit-q-{ITS}-2")).to_have_value("0")
    expect(message).to_be_hidden()
    w.wait_ready()
    assert w.number(f"cell-{ITS}-{CAT}") == pytest.approx(6.0)  # a zero third coordinate adds nothing
    dv = w.page.get_by_test_id("dv-input")
    dv.fill("9")
    expect(message).to_contain_text("d_v must be a whole number from 1 to 8")
    dv.fill("1")
    expect(w.page.get_by_test_id(f"edit-v-{ITS}-1")).to_have_count(0)
    expect(message).to_be_hidden()
