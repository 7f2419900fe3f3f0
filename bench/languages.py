"""What a first visit costs in each language: requests and bytes on the wire, as Chromium's own network
log counts them (cache disabled, compressed text, the bundled page), until the first view is drawn —
tests/browser/test_first_visit.py's measure, for every language, and what each adds to English's.

    .venv/bin/python -m bench.languages

A real server process (tests/browser/conftest.py's) and Debian's Chromium headless shell. Bytes, not
times: the figures do not depend on the machine's load.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, running_server

LOCALES = {"en": "en-US", "es": "es-ES", "zh": "zh-CN", "ar": "ar-EG"}  # each page in its browser's language
LANGUAGES = tuple(LOCALES)


def first_visit(browser: Any, base: str, lang: str) -> dict[str, float]:
    """{url: bytes on the wire} of a first visit to the page in `lang` (the browser's own language)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale=LOCALES[lang])
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    urls: dict[str, str] = {}
    sizes: dict[str, float] = {}
    cdp.on("Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"]))
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    page.goto(base + "/")
    page.wait_for_selector('#app[data-ready="true"]', timeout=60_000)
    page.wait_for_load_state("networkidle")
    got = page.evaluate("document.documentElement.lang")
    context.close()
    assert got.split("-")[0] == lang, (lang, got)
    return {urls[k].removeprefix(base): sizes.get(k, 0.0) for k in urls}


def kind(url: str) -> str:
    if "/static/i18n/" in url:
        return "catalog"
    if url.endswith(".woff2") or "woff2?" in url:
        return "fonts"
    if "/static/fonts/" in url:
        return "font css"
    return "page"


def main() -> None:
    with running_server() as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        visits = {lang: first_visit(browser, base, lang) for lang in LANGUAGES}
        browser.close()
    english = sum(visits["en"].values())
    print("| language | requests | KB on the wire | more than English | of which: catalog, font CSS, fonts (KB) |")
    print("|---|---|---|---|---|")
    for lang, visit in visits.items():
        total = sum(visit.values())
        parts = {k: sum(v for u, v in visit.items() if kind(u) == k) / 1024 for k in ("catalog", "font css", "fonts")}
        extra = f"+{(total - english) / 1024:.1f} KB" if lang != "en" else "—"
        split = ", ".join(f"{parts[k]:.1f}" for k in ("catalog", "font css", "fonts"))
        print(f"| {lang} | {len(visit)} | {total / 1024:.1f} | {extra} | {split} |")


if __name__ == "__main__":
    main()
