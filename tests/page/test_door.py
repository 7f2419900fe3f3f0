"""The page's one door to the server (issue 40): every request the page makes is a function of
static/js/api.js. Read from the sources: no other module calls fetch (or XMLHttpRequest,
sendBeacon, EventSource), and the modules that once did import their requests from api.js."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "static" / "js"
DOOR = JS / "api.js"
REQUEST = re.compile(r"\bfetch\s*\(|\bXMLHttpRequest\b|\bsendBeacon\b|\bEventSource\b")


def sources() -> list[Path]:
    return sorted(p for p in JS.rglob("*.js") if "dist" not in p.parts and "vendor" not in p.parts)


def request_lines(text: str) -> list[int]:
    """The line numbers of `text` where a request is made."""
    return [text.count("\n", 0, m.start()) + 1 for m in REQUEST.finditer(text)]


def test_the_check_finds_a_request_where_there_is_one() -> None:
    stray = 'const a = 1;\nconst r = await fetch ("/api/models");\nnavigator.sendBeacon("/x");\n'
    assert request_lines(stray) == [2, 3]
    assert request_lines("// prefetching is not a request\nconst fetched = 1;\n") == []


def test_only_api_js_asks_the_server() -> None:
    outside = [f"{p.relative_to(ROOT)}:{n}" for p in sources() if p != DOOR for n in request_lines(p.read_text())]
    assert outside == [], f"requests outside static/js/api.js: {outside}"
    assert request_lines(DOOR.read_text()), "api.js makes no request: the check reads the wrong file"


def test_the_modules_that_asked_themselves_import_their_requests() -> None:
    for rel, names in {
        "export/html.js": {"getText"},
        "classroom/roommenu.js": {"call", "getBlob"},
        "write/stream.js": {"postLines"},
        "sentence.js": {"allHeads", "listModels", "modelInfo"},
    }.items():
        imported = re.search(r'import \{([^}]*)\} from "\.\.?/api\.js";', (JS / rel).read_text())
        assert imported, f"{rel} does not import api.js"
        have = {n.strip() for n in imported.group(1).split(",")}
        assert names <= have, f"{rel} imports {sorted(have)} from api.js, not {sorted(names)}"
    assert not (JS / "classroom" / "api.js").exists(), "classroom/api.js: a second door"
    pure = (JS / "model.js").read_text()
    assert not re.search(r'from "\./api\.js"', pure), "model.js (pure view transforms) imports api.js"
