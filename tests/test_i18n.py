"""The message catalogs (static/i18n/<code>.json) and the page written in each language.

- Every catalog has exactly English's keys, and each message has English's placeholders, select cases
  and tags: checked by scripts/check-catalogs.mjs with the page's own parser (intl-messageformat), here
  on the real catalogs and on broken copies of them (the check must catch each kind of mistake).
- A formula set left to right inside Arabic (isolated: U+2066 … U+2069) keeps to one line; a long one
  breaks only before an "=".
- The template's messages are plain text (or text with tags) in every language, as app/i18n.py needs.
- The server writes the page in ?lang=, the reader's cookie, or the browser's Accept-Language, with
  the document's lang and dir, and the other catalogs' and fonts' URLs for the page's script.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.i18n import LANGUAGES, SOURCE, accepted, catalogs, negotiate
from app.main import create_app

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = ROOT / "static" / "i18n"
CHECK = ROOT / "scripts" / "check-catalogs.mjs"
TEMPLATE = ROOT / "templates" / "index.html"
HAS_NODE = shutil.which("node") is not None and (ROOT / "node_modules" / "intl-messageformat").is_dir()
needs_node = pytest.mark.skipif(not HAS_NODE, reason="node and npm's intl-messageformat are needed (npm ci)")


def read(code: str, folder: Path = CATALOGS) -> dict[str, str]:
    messages: dict[str, str] = json.loads((folder / f"{code}.json").read_text(encoding="utf-8"))
    return messages


def check(folder: Path) -> dict[str, Any]:
    out = subprocess.run(["node", str(CHECK), str(folder), "--json"], capture_output=True, text=True, timeout=60)
    report: dict[str, Any] = json.loads(out.stdout)
    assert out.returncode == (1 if report["problems"] else 0), out.stderr
    return report


def test_every_language_has_a_catalog_with_englishs_keys() -> None:
    english = read(SOURCE)
    assert sorted(p.stem for p in CATALOGS.glob("*.json")) == sorted(LANGUAGES)
    for code in LANGUAGES:
        keys = set(read(code))
        assert not set(english) - keys, f"{code} lacks {sorted(set(english) - keys)[:10]}"
        assert not keys - set(english), f"{code} has keys English lacks: {sorted(keys - set(english))[:10]}"
        assert all(isinstance(v, str) for v in read(code).values())


@needs_node
def test_placeholders_tags_and_syntax_agree_with_english() -> None:
    report = check(CATALOGS)
    assert report["problems"] == []
    assert set(report["languages"]) == set(LANGUAGES)
    assert len(set(report["languages"].values())) == 1  # the same number of messages in each


@needs_node
def test_the_check_catches_each_kind_of_mistake(tmp_path: Path) -> None:
    """Broken copies of the catalogs: a key missing, one extra, a placeholder renamed, a plural made
    plain, a select's case renamed, a tag dropped, a syntax error and a quote that swallows a placeholder."""
    for code in LANGUAGES:
        shutil.copy(CATALOGS / f"{code}.json", tmp_path / f"{code}.json")
    es, ar = read("es", tmp_path), read("ar", tmp_path)
    del es["page.chapters"]
    es["page.invented"] = "nada"
    es["table.window"] = es["table.window"].replace("{from}", "{desde}")
    es["chapter.masks.causal.seen"] = "«{word}» puede mirar {seen} palabras."
    es["table.note.mask"] = "{mask, select, causal {causal} otra {completa} other {completa}}"
    es["page.keys"] = re.sub(r"</?kbd>", "", es["page.keys"])
    ar["page.title"] = "{unclosed"
    ar["arith.mask.visible"] = "'{value}' (ظاهرة)"
    (tmp_path / "es.json").write_text(json.dumps(es, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "ar.json").write_text(json.dumps(ar, ensure_ascii=False), encoding="utf-8")
    problems = "\n".join(check(tmp_path)["problems"])
    assert "es: page.chapters: missing" in problems
    assert "es: page.invented: not in English's catalog" in problems
    assert "es: table.window: placeholders" in problems and "desde" in problems
    assert "es: chapter.masks.causal.seen: placeholders {seen:argument, word:argument}" in problems
    assert "es: table.note.mask: {mask, select} cases" in problems
    assert "es: page.keys: tags <> differ from English's <kbd>" in problems
    assert "ar: page.title:" in problems
    assert "ar: arith.mask.visible:" in problems
    assert "zh:" not in problems  # the untouched copy stays clean


def template_keys() -> tuple[set[str], set[str]]:
    """The message keys the template writes: plain ones (t(...)) and ones with tags (rich(...))."""
    text = TEMPLATE.read_text(encoding="utf-8")
    plain = set(re.findall(r"""\bt\(["']([\w.-]+)["']\)""", text))
    rich = set(re.findall(r"""\brich\(["']([\w.-]+)["']\)""", text))
    plain |= {f"example.{i}.title" for i in ("the-cat-ate-its-fish", "select-from-customers")}
    return plain, rich


ISOLATED = re.compile("\u2066([^\u2069]*)\u2069")
ONE_LINE = 33  # characters: a formula up to this long fits a phone's line


def test_arabics_formulas_do_not_break_inside() -> None:
    """A line break inside a formula the Arabic text holds left to right splits it over two lines of right-to-
    left text: "5 × 5 = 25" showed as "= 5 × 5" above "25". Its spaces are no-break spaces (U+00A0), and a
    longer formula breaks only before an "=" (its next line starts "= …")."""
    formulas = [(key, f) for key, text in read("ar").items() for f in ISOLATED.findall(text)]
    spaced = [(key, f) for key, f in formulas if "\u00a0" in f]
    assert len(formulas) > 90 and len(spaced) > 45
    for key, formula in formulas:
        breaks = formula.count(" ")
        if len(formula) <= ONE_LINE:
            assert breaks == 0, (key, formula)
        else:
            assert breaks == formula.count(" =\u00a0"), (key, formula)
    assert len(ISOLATED.findall("\u2066{n} × {n} = {cells}\u2069")[0]) <= ONE_LINE  # the one that broke


def test_the_templates_messages_are_plain_in_every_language() -> None:
    """app/i18n.py only looks a template message up: none may have a placeholder; tags only where rich()."""
    plain, rich = template_keys()
    assert len(plain) > 40 and len(rich) >= 5
    for code in LANGUAGES:
        messages = read(code)
        for key in plain | rich:
            assert "{" not in messages[key] and "}" not in messages[key], (code, key)
        for key in plain:
            assert not re.search(r"<\w", messages[key]), (code, key, "tags need rich()")
        for key in rich:
            assert set(re.findall(r"</?(\w+)>", messages[key])) <= {"kbd", "code", "b", "sub", "accent"}, (code, key)


def test_accept_language_and_the_choice_of_language() -> None:
    assert accepted("fr-CH, fr;q=0.9, es;q=0.8, *;q=0.5") == ["fr-CH", "fr", "es", "*"]
    assert accepted("en;q=0.2, ar;q=0.9, zh;q=0") == ["ar", "en"]
    assert negotiate(None, None, "fr-CH, fr;q=0.9, es-MX;q=0.8") == "es"
    assert negotiate(None, None, "zh-CN,zh;q=0.9") == "zh"
    assert negotiate(None, None, "de") == SOURCE
    assert negotiate(None, "ar", "es") == "ar"  # the reader's choice (cookie) before the browser's
    assert negotiate("zh-Hans", "ar", "es") == "zh"  # ?lang= before both
    assert negotiate("klingon", None, "es") == "es"  # an unknown ?lang= is no choice
    assert negotiate(None, None, None) == SOURCE


def test_a_catalogs_template_words_read_as_the_page_shows_them() -> None:
    cats = catalogs(CATALOGS)
    assert cats["es"].text("page.chapters") == "Capítulos"
    assert str(cats["en"].markup("page.keys")).startswith("Drag to orbit, scroll to zoom. Keys: <kbd>←</kbd>")
    assert str(cats["en"].markup("page.heading")) == 'Attention, <span class="accent">in 3D</span>'
    assert cats["ar"].dir == "rtl" and cats["zh"].lang == "zh-Hans"


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


@pytest.mark.parametrize(
    ("how", "lang", "dir_", "word"),
    [
        ({}, "en", "ltr", ">Chapters<"),
        ({"params": {"lang": "es"}}, "es", "ltr", ">Capítulos<"),
        ({"headers": {"accept-language": "zh-CN,zh;q=0.9,en;q=0.5"}}, "zh-Hans", "ltr", ">章节<"),
        ({"cookies": {"a3d_lang": "ar"}, "headers": {"accept-language": "es"}}, "ar", "rtl", ">الفصول<"),
    ],
)
def test_the_page_is_written_in_the_readers_language(
    client: TestClient, how: dict[str, Any], lang: str, dir_: str, word: str
) -> None:
    cookies = how.pop("cookies", None)
    if cookies:
        client.cookies.update(cookies)
    try:
        r = client.get("/", **how)
    finally:
        client.cookies.clear()
    assert r.status_code == 200
    assert f'<html lang="{lang}" dir="{dir_}"' in r.text
    assert word in r.text
    assert "accept-language" in r.headers["vary"].lower() and "cookie" in r.headers["vary"].lower()
    urls = json.loads(re.search(r'data-catalogs="([^"]+)"', r.text)[1].replace("&#34;", '"'))  # type: ignore[index]
    assert set(urls) == set(LANGUAGES) - {SOURCE}  # English's catalog is in the page's script
    assert all(re.fullmatch(r"/static/i18n/\w+\.json\?v=[0-9a-f]{12}", u) for u in urls.values())
    # a font's style sheet is in the page only where its language is (the others' are loaded when chosen)
    fonts = re.findall(r'<link rel="stylesheet" href="(/static/fonts/\w+\.css[^"]*)"', r.text)
    code = {"zh-Hans": "zh"}.get(lang, lang)
    if code in ("ar", "zh") and (ROOT / "static" / "fonts" / f"{code}.css").exists():
        assert len(fonts) == 1 and f"/fonts/{code}.css" in fonts[0]
    else:
        assert fonts == []


def test_every_catalog_and_its_fonts_are_served(client: TestClient) -> None:
    for code in LANGUAGES:
        r = client.get(f"/static/i18n/{code}.json")
        assert r.status_code == 200 and r.json() == read(code)


def test_the_errors_a_learner_meets_have_a_type_each_language_words(client: TestClient) -> None:
    """The server's 422s that a page shows (an empty or too long sentence or prompt, an order that is
    no permutation) carry a type with a message in every catalog (error.type.<type>, which api.js
    writes in the page's language) and, in ctx, the numbers that message needs; English stays the
    server's own words."""
    english = read(SOURCE)
    seen: dict[str, Any] = {}
    asks = [
        ("/api/attention", {"sentence": "   "}, "sentence", "empty_text", {}),
        ("/api/attention", {"sentence": "the cat " * 400}, "sentence", "too_many_tokens", {"limit": 512}),
        ("/api/positions", {"words": ["a", "b", "c"], "order": [0, 0, 2]}, "order", "not_a_permutation", {"last": 2}),
        ("/api/generate", {"prompt": " "}, "prompt", "empty_text", {}),
    ]
    for path, body, field, type_, ctx in asks:
        r = client.post(path, json=body)
        assert r.status_code == 422, (path, r.text)
        (item,) = r.json()["detail"]
        assert item["loc"] == ["body", field] and item["type"] == type_, item
        assert ctx.items() <= item.get("ctx", {}).items(), item
        assert f"error.type.{type_}" in english
        seen[type_] = item
    too_long = seen["too_many_tokens"]
    assert too_long["ctx"]["tokens"] > too_long["ctx"]["limit"]
    assert f"sentence is {too_long['ctx']['tokens']} tokens" in too_long["msg"]  # the English page shows this
    for code in LANGUAGES:
        message = read(code)["error.type.too_many_tokens"]
        assert "{tokens}" in message and "{limit}" in message, code
