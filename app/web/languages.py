"""The page's language, for the template: which one (app.i18n.negotiate), its words, and where the
page's script finds the other languages' catalogs and fonts (versioned URLs, fetched only when chosen)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from app.i18n import COOKIE, LANGUAGES, SOURCE, catalogs, negotiate
from app.web.assets import STATIC_DIR, Assets

CATALOGS = STATIC_DIR / "i18n"
FONTS = STATIC_DIR / "fonts"  # built by scripts/fonts.py: <code>.css and its subset fonts, per script


def page_context(request: Request, assets: Assets) -> dict[str, Any]:
    """What templates/index.html needs to be written in the request's language."""
    headers, query = request.headers, request.query_params
    code = negotiate(query.get("lang"), request.cookies.get(COOKIE), headers.get("accept-language"))
    catalog = catalogs(CATALOGS)[code]
    fonts = {c: assets.url(f"fonts/{c}.css") for c in LANGUAGES if (FONTS / f"{c}.css").is_file()}
    return {
        "page": {"code": code, "lang": catalog.lang, "dir": catalog.dir},
        "languages": LANGUAGES,
        "t": catalog.text,
        "rich": catalog.markup,
        "catalog_urls": {c: assets.url(f"i18n/{c}.json") for c in LANGUAGES if c != SOURCE},
        "fonts": fonts,
    }


# the page differs by these request headers (a cache between the page and its readers keeps one per value)
VARY = "Accept-Language, Cookie"
