"""A browser context kept for the next test (conftest.watched_page) is handed on as a new one would be."""

from __future__ import annotations

from typing import Any

from tests.browser.conftest import watched_page

# options no other test asks for: the two watched pages below are of a kind of their own
OPTIONS = {"viewport": {"width": 1111, "height": 777}}


def test_a_kept_context_is_handed_on_clean(browser: Any, server: str) -> None:
    seen: list[str] = []
    with watched_page(browser, server, **OPTIONS) as first:
        first.goto("?chapter=heads")
        first.page.evaluate("() => { localStorage.setItem('a3d.lang', 'es'); sessionStorage.setItem('x', '1'); }")
        first.page.context.add_cookies([{"name": "a3d_lang", "value": "es", "url": server}])
        first.page.context.grant_permissions(["clipboard-read"], origin=server)
        first.page.on("console", lambda m: seen.append(m.text))
        first.page.set_viewport_size({"width": 390, "height": 844})
        first.page.emulate_media(media="print", reduced_motion="no-preference")
        first.page.set_default_timeout(1_000)
        first.page.route("**/api/attention", lambda route: route.abort())
        page, context = first.page, first.page.context
    with watched_page(browser, server, **OPTIONS) as second:
        assert second.page is page and second.page.context is context  # the same context, kept
        assert page.url == "about:blank"
        assert context.cookies() == []
        assert page.viewport_size == OPTIONS["viewport"]
        second.goto()  # a request to /api/attention is not held up: the route is gone
        assert second.page.evaluate("() => [localStorage.length, sessionStorage.length]") == [0, 0]
        assert second.page.evaluate("matchMedia('print').matches") is False
        assert second.page.evaluate("matchMedia('(prefers-reduced-motion: reduce)').matches") is True
        state = "(async () => (await navigator.permissions.query({name: 'clipboard-read'})).state)()"
        assert second.page.evaluate(state) == "prompt"
        second.page.evaluate("console.log('after')")
        assert "after" not in seen  # the first test's listener is gone
        assert second.page.evaluate("document.documentElement.lang") == "en"  # no Spanish left behind


def test_a_context_with_an_init_script_is_not_kept(browser: Any, server: str) -> None:
    with watched_page(browser, server, **OPTIONS) as first:
        first.page.add_init_script("window.__planted = true")
        first.goto()
        page = first.page
    assert page.is_closed()
    with watched_page(browser, server, **OPTIONS) as second:
        second.goto()
        assert second.page.evaluate("window.__planted === undefined")
