"""The page's languages on the server: the same message catalogs the page reads (static/i18n/<code>.json,
ICU MessageFormat, English the source), for the words the server writes itself: the page's template.

The page's script (static/js/i18n.js) formats every message with intl-messageformat; the template's
messages are plain text, or text with simple tags (<kbd>…</kbd>), so here a message is only looked up
(an ICU quote, '' → ', undone). tests/test_i18n.py checks that every message the template uses is one
of those, and that every catalog has English's keys with English's placeholders.

Which language a page is written in: ?lang=, else the reader's choice (the a3d_lang cookie the page's
language menu sets), else the browser's Accept-Language, else English — the page's script decides the
same way (with localStorage for the cookie) and puts the template's words right if they differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from markupsafe import Markup, escape

SOURCE = "en"
# code → (the document's lang, its direction, its name in itself)
LANGUAGES: dict[str, tuple[str, str, str]] = {
    "en": ("en", "ltr", "English"),
    "es": ("es", "ltr", "Español"),
    "zh": ("zh-Hans", "ltr", "中文（简体）"),
    "ar": ("ar", "rtl", "العربية"),
}
COOKIE = "a3d_lang"
# the tags a message with markup may hold, and the element each becomes (static/js/i18n.js: the same)
TAGS = {"kbd": ("<kbd>", "</kbd>"), "code": ("<code>", "</code>"), "b": ("<b>", "</b>"), "sub": ("<sub>", "</sub>"),
        "accent": ('<span class="accent">', "</span>")}  # fmt: skip
_TAG = re.compile(r"&lt;(/?)(" + "|".join(TAGS) + r")&gt;")


def language_of(tag: str | None) -> str | None:
    """The catalog's code for a language tag ("es-MX" → "es", "zh-Hant" → "zh"), or None."""
    primary = re.split(r"[-_]", (tag or "").strip().lower())[0]
    return primary if primary in LANGUAGES else None


def accepted(header: str | None) -> list[str]:
    """Accept-Language's tags, most wanted first (q=0 left out; equal q in the header's order)."""
    ranked = []
    for i, part in enumerate((header or "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if tag and q > 0:
            ranked.append((-q, i, tag.strip()))
    return [tag for _, _, tag in sorted(ranked)]


def negotiate(query: str | None, cookie: str | None, accept_language: str | None) -> str:
    """The page's language: ?lang=, the reader's choice (cookie), the browser's first we have, English."""
    for asked in (query, cookie):
        found = language_of(asked)
        if found:
            return found
    for tag in accepted(accept_language):
        found = language_of(tag)
        if found:
            return found
    return SOURCE


@dataclass(frozen=True)
class Catalog:
    """One language's messages, English's behind them (a key a catalog lacks reads in English)."""

    code: str
    messages: Mapping[str, str]
    source: Mapping[str, str]

    @property
    def lang(self) -> str:
        return LANGUAGES[self.code][0]

    @property
    def dir(self) -> str:
        return LANGUAGES[self.code][1]

    def text(self, key: str) -> str:
        """A plain message: its text, ICU's doubled quote undone."""
        message = self.messages.get(key, self.source.get(key))
        if message is None:
            raise KeyError(f"no message {key!r} in the catalogs")
        return message.replace("''", "'")

    def markup(self, key: str) -> Markup:
        """A message with tags (<kbd>…</kbd>): the text escaped, the tags kept as elements."""
        return Markup(_TAG.sub(lambda m: TAGS[m[2]][1 if m[1] else 0], str(escape(self.text(key)))))


def read_catalog(folder: Path, code: str) -> dict[str, str]:
    messages: dict[str, str] = json.loads((folder / f"{code}.json").read_text(encoding="utf-8"))
    return messages


@cache
def catalogs(folder: Path) -> dict[str, Catalog]:
    """Every language's catalog in `folder`, read once (a language whose file is missing reads in English)."""
    source = read_catalog(folder, SOURCE)
    out = {}
    for code in LANGUAGES:
        try:
            messages = source if code == SOURCE else read_catalog(folder, code)
        except FileNotFoundError:
            messages = source
        out[code] = Catalog(code, messages, source)
    return out
