"""The page's house rules (issue 16), read from its sources: no module-level mutable state
outside the store (at most three module-level `let`/`var` in all of static/js), main.js only
wires (≤ 200 lines), the animal sentence written once, every chapter file in the registry, and
derive(state) pure: run in Node on a real state, it leaves the state as it found it."""

from __future__ import annotations

import re
from pathlib import Path

from tests.page.node import JS, ROOT, run_in_node

MODULE_LET = re.compile(r"^(?:export\s+)?(?:let|var)\s", re.MULTILINE)


def sources() -> list[Path]:
    return sorted(p for p in JS.rglob("*.js") if "dist" not in p.parts and "vendor" not in p.parts)


def test_module_level_let_and_var_are_at_most_three() -> None:
    found = []
    for path in sources():
        text = path.read_text()
        for m in MODULE_LET.finditer(text):
            found.append(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}")
    print("module-level let/var:", found)
    assert len(found) <= 3, f"{len(found)} module-level let/var in static/js: {found}"


def test_main_js_only_wires() -> None:
    lines = (JS / "main.js").read_text().count("\n")
    assert lines <= 200, f"main.js has {lines} lines"


def test_the_animal_sentence_is_written_once() -> None:
    sentence = "The animal didn't cross the street because it was too tired."
    places = [str(p.relative_to(ROOT)) for p in sources() if sentence in p.read_text()]
    assert places == ["static/js/model.js"], places


def test_every_chapter_file_is_in_the_registry() -> None:
    registry = (JS / "chapters" / "index.js").read_text()
    chapters = [p.stem for p in (JS / "chapters").glob("*.js") if "export default {" in p.read_text()]
    assert len(chapters) >= 9
    for chapter in chapters:
        assert f'import("./{chapter}.js")' in registry, f"{chapter}.js is not registered"
        assert f'id: "{chapter}"' in (JS / "chapters" / f"{chapter}.js").read_text()


DERIVE_CHECK = """
import { derive } from "DERIVE";
const row = (xs) => xs;
const answer = (mask) => ({
  tokens: ["the", "cat", "ate"], mask, d_k: 2,
  q: [[1, 0], [0, 1], [1, 1]], k: [[1, 0], [0, 1], [1, 1]], v: [[1, 0], [0, 1], [1, 1]],
  scores: [[1, 0, 1], [0, 1, 1], [1, 1, 2]], scaled: [[0.7, 0, 0.7], [0, 0.7, 0.7], [0.7, 0.7, 1.4]],
  masked: mask === "causal"
    ? [[0.7, null, null], [0, 0.7, null], [0.7, 0.7, 1.4]]
    : [[0.7, 0, 0.7], [0, 0.7, 0.7], [0.7, 0.7, 1.4]],
  weights: [[0.4, 0.2, 0.4], [0.2, 0.4, 0.4], [0.25, 0.25, 0.5]],
  output: [[0.8, 0.6], [0.6, 0.8], [0.75, 0.75]],
});
const state = {
  chapter: "steps", step: "softmax", mask: "full", focus: 7, hover: { row: 9, col: 0 }, hoverToken: null,
  sentence: null, example: "x", input: null, merge: false, layer: 0, head: 0, predict: false, guesses: {},
  withheld: null, pending: false, errors: [], notice: null,
  result: { full: answer("full"), causal: answer("causal") },
};
const before = JSON.stringify(state);
const open = derive(state);
const held = derive({ ...state, withheld: { reason: "quiz" } });
const out = {
  unchanged: JSON.stringify(state) === before,
  focusRow: open.focusRow, hover: open.hover, stateFocus: state.focus,
  openStage: open.shownStep.stage, openLinks: open.scene.data[open.scene.step.stage][2],
  heldStage: held.shownStep.stage, heldLinks: held.scene.data[held.scene.step.stage][2],
  heldCompare: held.compare, heldText: JSON.stringify(held.arithmetic),
};
console.log(JSON.stringify(out));
"""


def test_derive_is_pure_and_withholds_the_weights() -> None:
    out = run_in_node(DERIVE_CHECK, DERIVE="attention/derive.js")
    assert out["unchanged"], "derive() changed the state it was given"
    assert out["stateFocus"] == 7 and out["focusRow"] == 2  # clamped in the view, not in the state
    assert out["hover"] is None  # a hover outside the table is dropped in the view
    assert out["openStage"] == "weights" and out["openLinks"] == [0.25, 0.25, 0.5]
    # withheld: the masked scores (the givens), every link alike, no comparison, no weight in the arithmetic
    assert out["heldStage"] == "masked"
    assert out["heldLinks"] == [0.5, 0.5, 0.5]
    assert out["heldCompare"] is None
    assert "0.250" not in out["heldText"] and "0.500" not in out["heldText"]
