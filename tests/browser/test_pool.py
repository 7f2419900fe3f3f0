"""The browser tests' pages are lent again (tests/browser/conftest.py, `watched_page`): a page
lent to a second test holds nothing the first one left — storage, cookies, viewport, media,
routes, listeners — as a new browser context would not."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import VIEWPORT, Watched

pytestmark = pytest.mark.browser

_FIRST: list[Any] = []  # the page the first test was lent


def test_a_page_is_marked_every_way_a_test_can_mark_it(watched: Watched) -> None:
    w = watched
    w.goto()
    w.page.evaluate(
        """() => {
            localStorage.setItem('pool-local', '1');
            sessionStorage.setItem('pool-session', '1');
            document.cookie = 'pool-cookie=1; path=/';
        }"""
    )
    w.page.set_viewport_size({"width": 390, "height": 844})
    w.page.emulate_media(reduced_motion="no-preference", media="print")
    w.page.route("**/api/examples*", lambda route: route.fulfill(status=500, body="marked"))
    w.page.on("dialog", lambda d: d.dismiss())
    _FIRST.append(w.page)
    assert w.page.evaluate("() => localStorage.getItem('pool-local')") == "1"


def test_the_next_test_gets_the_same_page_as_new(watched: Watched) -> None:
    w = watched
    assert _FIRST and w.page is _FIRST[0], "the first test's page was not lent again (no pooling)"
    assert w.page.viewport_size == VIEWPORT
    assert w.page._impl_obj.listeners("dialog") == []
    w.goto()  # the route of the first test answered 500: gone, the page loads its examples
    seen = w.page.evaluate(
        """() => ({
            local: localStorage.getItem('pool-local'),
            session: sessionStorage.getItem('pool-session'),
            cookie: document.cookie,
            reduced: matchMedia('(prefers-reduced-motion: reduce)').matches,
            print: matchMedia('print').matches,
        })"""
    )
    assert seen == {"local": None, "session": None, "cookie": "", "reduced": True, "print": False}
