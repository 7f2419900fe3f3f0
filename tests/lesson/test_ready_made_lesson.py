"""The ready-made lesson's words against the page: its step numbers are the page's, and each note
speaks of what its view shows (the causal mask's view shows scores, not weights)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "app" / "classroom" / "lessons" / "seed-003.json"


def _page_steps() -> list[str]:
    """The walkthrough's step ids in the order the page numbers them (1. Score … 5. Mix)."""
    source = (ROOT / "static" / "js" / "attention" / "stages.js").read_text(encoding="utf-8")
    return re.findall(r'^  stage\("(\w+)", \{', source, flags=re.M)


def _views() -> list[dict[str, Any]]:
    views: list[dict[str, Any]] = json.loads(LESSON.read_text(encoding="utf-8"))["views"]
    return views


def test_step_numbers_are_the_pages() -> None:
    steps = _page_steps()
    assert steps == ["score", "scale", "mask", "softmax", "mix"]
    numbered = 0
    for view in _views():
        state, note = view["state"], view["note"]
        for number, name in re.findall(r"Step (\d) \((\w+)", note):
            assert steps[int(number) - 1] == name, (number, name, note)
            numbered += 1
        if state.get("chapter") == "steps":
            # the note names the view's own step under the page's number
            assert f"Step {steps.index(state['step']) + 1} ({state['step']}" in note, note
    assert numbered == 4


def test_the_causal_view_note_describes_scores_not_weights() -> None:
    view = next(v for v in _views() if v["state"].get("chapter") == "masks")
    assert view["state"]["step"] == "causal"  # the masks chapter's scores under the causal mask (step "mask")
    note = view["note"]
    assert "0, 0, −∞, −∞, −∞" in note  # “cat”'s row of masked scores, as the view shows it
    assert "splits" not in note and "50" not in note


def test_no_student_reads_of_seeds_or_sources() -> None:
    text = LESSON.read_text(encoding="utf-8").lower()
    assert "seed" not in text.replace("seed-003", "") and "source" not in text
