"""Exports, downloaded in the browser and read back: the CSV's numbers are the API's, the SVG parses
and names every token (user text stays text), the PNG of the 3D view is twice its size with a legend,
and the standalone HTML, opened from a file: URL with the network blocked, draws, steps and toggles
the mask."""

from __future__ import annotations

import base64
import csv
import io
import json
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote
from xml.etree import ElementTree

import pytest

from tests.browser.conftest import Watched
from tests.browser.helpers import download, next_frames, offline_page

pytestmark = pytest.mark.browser

# words a spreadsheet or a browser could take for something else
TOKENS = ["=1+1", "a,b", 'say "hi"', "<script>alert(1)</script>"]
Q = [[1.0, 0.0], [0.0, 1.2], [1.2, 0.5], [2.0, 0.0]]
K = [[0.0, 0.0], [3.0, 0.0], [0.0, 3.0], [0.5, 0.0]]
V = [[0.0, 0.0], [1.0, 0.0], [0.0, 0.5], [0.3, 0.0]]


def _rows(m: list[list[float]]) -> str:
    return ";".join(",".join(str(x) for x in row) for row in m)


def _query() -> str:
    return f"?tokens={quote(json.dumps(TOKENS))}&q={_rows(Q)}&k={_rows(K)}&v={_rows(V)}&step=softmax&focus=3"


def _api(base: str, mask: str = "full") -> dict[str, Any]:
    body = json.dumps({"tokens": TOKENS, "q": Q, "k": K, "v": V, "mask": mask}).encode()
    req = urllib.request.Request(base + "/api/attention", body, {"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        answer: dict[str, Any] = json.load(r)
        return answer


def _download(w: Watched, name: str, tmp_path: Path) -> Path:
    return download(w, w.page.get_by_role("button", name=name, exact=True), tmp_path)


def _png(w: Watched, data: bytes) -> dict[str, Any]:
    """Width, height and a few pixels of a PNG, decoded by the browser."""
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    info: dict[str, Any] = w.page.evaluate(
        """async (url) => {
          const img = new Image(); img.src = url; await img.decode();
          const c = document.createElement("canvas"); c.width = img.width; c.height = img.height;
          const g = c.getContext("2d"); g.drawImage(img, 0, 0);
          const px = g.getImageData(0, 0, c.width, c.height).data;
          const colours = new Set();
          for (let i = 0; i < px.length; i += 4 * 97) colours.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
          const has = (rgb, y0, y1) => {
            for (let y = y0; y < y1; y++) for (let x = 0; x < c.width; x++) {
              const i = 4 * (y * c.width + x);
              if (px[i] === rgb[0] && px[i + 1] === rgb[1] && px[i + 2] === rgb[2]) return true;
            }
            return false;
          };
          const rgb = (h) => [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16));
          const band = Math.round(img.height * 0.8);
          const swatches = ["e69f00", "0072b2", "009e73", "d55e00"];
          return { width: img.width, height: img.height, colours: colours.size,
                   legend: swatches.map((h) => has(rgb(h), band, img.height)) };
        }""",
        url,
    )
    return info


def test_csv_numbers_are_the_apis_and_words_stay_text(watched: Watched, tmp_path: Path) -> None:
    w = watched
    w.goto(_query())
    w.page.get_by_test_id("export-stage").select_option("weights")
    path = _download(w, "CSV", tmp_path)
    assert path.suffix == ".csv"
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    header, body = rows[0], rows[1:]
    # every word is one cell, and none can start a formula
    assert header == ["query", "'=1+1", "a,b", 'say "hi"', "<script>alert(1)</script>"]
    assert [r[0] for r in body] == header[1:]
    weights = _api(w.base)["weights"]
    assert [[float(x) for x in r[1:]] for r in body] == weights  # every digit is the server's


def test_json_export_is_the_stage(watched: Watched, tmp_path: Path) -> None:
    w = watched
    w.goto(_query())
    w.page.get_by_test_id("export-stage").select_option("scores")
    data = json.loads(_download(w, "JSON", tmp_path).read_text())
    assert data["stage"] == "scores"
    assert data["tokens"] == TOKENS
    assert data["values"] == _api(w.base)["scores"]


def test_svg_parses_and_names_every_token(watched: Watched, tmp_path: Path) -> None:
    w = watched
    w.goto(_query())
    w.page.get_by_test_id("export-stage").select_option("weights")
    path = _download(w, "SVG", tmp_path)
    root = ElementTree.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text for t in root.iter(ns + "text")]
    for token in TOKENS:
        assert texts.count(token) >= 2  # a row label and a column label
    assert not list(root.iter(ns + "script"))
    weights = _api(w.base)["weights"]
    assert f"{weights[3][1]:.3f}" in texts
    png = _png(w, _download(w, "Table PNG", tmp_path).read_bytes())
    assert png["width"] == 2 * int(root.get("width") or 0)


def test_png_of_the_3d_view_is_twice_its_size_with_a_legend(watched: Watched, tmp_path: Path) -> None:
    w = watched
    w.goto("")
    box = w.page.get_by_test_id("scene-canvas").bounding_box()
    assert box
    info = _png(w, _download(w, "PNG", tmp_path).read_bytes())
    assert info["width"] == round(2 * box["width"])
    assert info["height"] > round(2 * box["height"])  # the legend's band below the view
    assert all(info["legend"]), info  # q, k, v and z swatches in the legend
    assert info["colours"] > 20  # a drawn scene, not a blank canvas


def test_standalone_html_works_offline_from_a_file(watched: Watched, browser: Any, tmp_path: Path) -> None:
    w = watched
    w.goto("?step=score&focus=3")
    path = _download(w, "HTML", tmp_path)
    html = path.read_text(encoding="utf-8")
    assert "<script src=" not in html and "http://" not in html.split("attention-data")[0]
    with offline_page(browser, path) as page:
        page.wait_for_function("() => Number(document.querySelector('#scene').dataset.frames || 0) > 0")
        assert page.locator('[data-testid="cell-3-1"]').inner_text() == "6.000"  # its·cat = 2·3 + 0·0
        before = page.locator("canvas").first.screenshot()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        assert page.evaluate("document.body.dataset.step") == "softmax"
        row = [page.locator(f'[data-testid="cell-3-{j}"]').inner_text() for j in range(5)]
        assert row == ["0.013", "0.895", "0.013", "0.026", "0.053"]
        page.keyboard.press("m")
        assert page.evaluate("document.body.dataset.mask") == "causal"
        assert page.locator('[data-testid="cell-1-0"]').inner_text() == "0.500"
        after = page.locator("canvas").first.screenshot()
        assert before != after
        drawn = _png(w, after)
        assert drawn["colours"] > 20


def test_a_chapters_numbers_and_picture_export(watched: Watched, tmp_path: Path) -> None:
    """Another chapter than the walkthrough: the RNN's hidden states as CSV (the server's numbers,
    one row per word) and its 3D view as a PNG."""
    w = watched
    w.page.goto(w.base + "/?chapter=rnn")
    w.page.wait_for_selector("#chapter-text:not(:empty)", timeout=30_000)
    w.page.get_by_test_id("export-stage").select_option("h")
    rows = list(csv.reader(io.StringIO(_download(w, "CSV", tmp_path).read_text(encoding="utf-8"))))
    with urllib.request.urlopen(
        urllib.request.Request(w.base + "/api/rnn", b"{}", {"content-type": "application/json"})
    ) as r:
        answer = json.load(r)
    assert [r[0] for r in rows[1:]] == answer["words"]
    assert [[float(x) for x in r[1:]] for r in rows[1:]] == answer["h"]
    info = _png(w, _download(w, "PNG", tmp_path).read_bytes())
    assert info["colours"] > 20 and all(info["legend"])


# ---- words no picture can hold as they are, and a page CSV that escapes as the API's -------------------

CONTROL = [chr(c) for c in range(0x20)] + ["\x7f"]  # every C0 control character and DEL


def _printable(s: str) -> str:
    """A word as the exports draw it: each control character as its Unicode control picture."""
    return "".join(chr(0x2421) if c == "\x7f" else chr(0x2400 + ord(c)) if ord(c) < 0x20 else c for c in s)


def _hand_set(tokens: list[str]) -> str:
    n = len(tokens)
    q = [[1.0 + i, 0.5 * (i % 3)] for i in range(n)]
    k = [[0.5 * (i % 2), 1.0 + i / 2] for i in range(n)]
    v = [[0.1 * i, 1.0] for i in range(n)]
    return f"?tokens={quote(json.dumps(tokens))}&q={_rows(q)}&k={_rows(k)}&v={_rows(v)}&step=softmax&focus=0"


def test_svg_and_table_png_hold_every_control_character(watched: Watched, tmp_path: Path) -> None:
    """GPT-2 makes tokens of U+0001, U+000B …: the SVG must still be well-formed XML (each control
    character drawn as its control picture) and the Table PNG must decode, for all 33 of them."""
    w = watched
    tokens = ["a" + "".join(CONTROL[i::4]) + "z" for i in range(4)]  # every control character, in 4 words
    assert sorted(c for t in tokens for c in t[1:-1]) == sorted(CONTROL)
    w.goto(_hand_set(tokens))
    w.page.get_by_test_id("export-stage").select_option("weights")
    path = _download(w, "SVG", tmp_path)
    root = ElementTree.fromstring(path.read_bytes())  # raises on a character XML forbids
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text for t in root.iter(ns + "text")]
    for token in tokens:
        assert texts.count(_printable(token)) >= 2, (token, texts)  # a row label and a column label
    png = _png(w, _download(w, "Table PNG", tmp_path).read_bytes())
    assert png["width"] == 2 * int(root.get("width") or 0) and png["colours"] > 5


def test_page_csv_escapes_words_exactly_as_the_api(watched: Watched, tmp_path: Path) -> None:
    """The page's CSV and the API's (?format=csv) write every word's cell alike: a leading line feed,
    = + - @, tab or CR gets an apostrophe; commas, quotes and line breaks are quoted."""
    w = watched
    tokens = ["\nfeed", "a\nb", "=1+1", "-2", "\tt", "\rr", 'say "hi"', "a,b", "\x01\x0b", "@x", " plain"]
    w.goto(_hand_set(tokens))
    w.page.get_by_test_id("export-stage").select_option("weights")
    page_csv = _download(w, "CSV", tmp_path).read_bytes().decode("utf-8")
    n = len(tokens)
    parts = dict(p.split("=", 1) for p in _hand_set(tokens)[1:].split("&"))

    def rows(s: str) -> list[list[float]]:
        return [[float(x) for x in r.split(",")] for r in s.split(";")]

    body = {"tokens": tokens, "q": rows(parts["q"]), "k": rows(parts["k"]), "v": rows(parts["v"]), "mask": "full"}
    url = w.base + "/api/attention?format=csv&stage=weights"
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        api_csv = r.read().decode("utf-8")
    page_rows = list(csv.reader(io.StringIO(page_csv, newline="")))
    api_rows = list(csv.reader(io.StringIO(api_csv, newline="")))
    assert page_rows[0] == api_rows[0]  # the header: every word as a column name
    assert [r[0] for r in page_rows[1:]] == [r[0] for r in api_rows[1:]]  # every word as a row name
    assert page_rows[0][1] == "'\nfeed" and len(page_rows) == n + 1
    # byte for byte: the header line as the API writes it
    header = io.StringIO(newline="")
    csv.writer(header, lineterminator="\r\n").writerow(api_rows[0])
    assert api_csv.startswith(header.getvalue()) and page_csv.startswith(header.getvalue())
    # and the numbers are the same numbers
    assert [[float(x) for x in r[1:]] for r in page_rows[1:]] == [[float(x) for x in r[1:]] for r in api_rows[1:]]


def test_standalone_html_of_a_long_sentence_draws_its_window(watched: Watched, browser: Any, tmp_path: Path) -> None:
    """A 64-token sentence: the exported file draws the page's 32-token window around the focus, every
    one of those tokens labelled inside its 3D view, none outside it."""
    w = watched
    sentence = " ".join(["word"] * 62)  # 64 tokens with [CLS] and [SEP]
    body = json.dumps({"sentence": sentence, "mask": "full"}).encode()  # loads the model before the page asks
    with urllib.request.urlopen(
        urllib.request.Request(w.base + "/api/attention", body, {"content-type": "application/json"}), timeout=300
    ) as r:
        assert len(json.load(r)["tokens"]) == 64
    w.goto(f"?sentence={quote(sentence)}&step=softmax&focus=40")
    w.wait_ready(mode="sentence", focus=40)
    path = _download(w, "HTML", tmp_path)
    # reduced motion, as the watched pages: with motion the 64-token file took 11–33 s to get ready and
    # 23 s more to read 32 cells at load 15 here (1 s each without); the 4-token file keeps the motion
    with offline_page(browser, path, reduced_motion="reduce") as page:
        page.wait_for_function("() => Number(document.querySelector('#scene').dataset.frames || 0) > 0")
        next_frames(page)  # the labels are placed after the first frame
        assert page.evaluate("document.body.dataset.window") == "25-56"  # focus 40, as the page: rows 24 … 55
        box = page.locator("#scene canvas").first.bounding_box()
        assert box
        labels = page.evaluate(
            """() => [...document.querySelectorAll('#scene .label-query')]
                .filter((e) => getComputedStyle(e).display !== 'none' && e.textContent.trim())
                .map((e) => {
                    const r = e.getBoundingClientRect();
                    return [e.textContent, r.left, r.top, r.right, r.bottom];
                })"""
        )
        assert len(labels) == 32, [x[0] for x in labels]
        for text, left, top, right, bottom in labels:
            inside = left >= box["x"] - 1 and right <= box["x"] + box["width"] + 1
            inside = inside and top >= box["y"] - 1 and bottom <= box["y"] + box["height"] + 1
            assert inside, (text, (left, top, right, bottom), box)
        # the page had only the full mask (a sentence too long to compare: static/js/model.js); the
        # file holds the causal one too, the server's numbers
        body = json.dumps({"sentence": sentence, "layer": 0, "head": 0, "mask": "causal"}).encode()
        req = urllib.request.Request(w.base + "/api/attention", body, {"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            served = json.load(r)["weights"][40]
        page.keyboard.press("m")
        assert page.evaluate("document.body.dataset.mask") == "causal"
        shown = page.evaluate(
            "() => Array.from({ length: 32 }, (_, j) =>"
            " document.querySelector(`[data-testid='cell-40-${j + 24}']`).innerText)"
        )
        assert shown == [f"{x:.3f}" for x in served[24:56]], (shown, served[24:56])
        assert shown[-1] == "0.000"  # key 55 is after query 40: hidden
