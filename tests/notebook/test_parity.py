"""The notebook's scene and worked arithmetic against the page's, built from the same answers.

app/notebook draws with pythreejs what the page draws with three.js, and its text follows the
page's static/js/format.js and arithmetic.js: a port by hand. Rather than a third description that
both would read (a format both sides must parse, for two renderers that already exist), this test
keeps the two in step: Node runs the page's own modules (tests/notebook/page_scene.mjs) on the
very answers the notebook computes, and the row layout, every arrow, every link's radius, colour
and label, and every line of the worked arithmetic must agree, for every step and every focused
query. A change made on one side only fails here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.notebook.markup import arithmetic
from app.notebook.numbers import STEPS, hand_set
from app.notebook.scene import AttentionScene, Layout

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "notebook" / "page_scene.mjs"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="the page's modules run in Node")


def _random(n: int, d_k: int, d_v: int, seed: int) -> tuple[list[str], Any, Any, Any]:
    rng = np.random.default_rng(seed)
    words = ["the", "cat", "ate", "its", "fish", "and", "then", "slept", "on", "a", "warm", "mat"]
    tokens = [words[i % len(words)] + ("" if i < len(words) else str(i)) for i in range(n)]
    return tokens, rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k)), rng.normal(size=(n, d_v))


def answers() -> list[dict[str, Any]]:
    """The worked example (2-D) in both masks, projected 4-D/3-D vectors, and a crowded row of 16."""
    cat = hand_set(None, None, None, None, None)
    return [
        cat.result("causal"),
        cat.result("full"),
        hand_set(None, *_random(5, 4, 3, seed=1)).result("causal"),
        hand_set(None, *_random(16, 2, 2, seed=2)).result("full"),
    ]


@pytest.fixture(scope="module")
def both() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    given = answers()
    run = subprocess.run(
        ["node", str(SCRIPT)], input=json.dumps(given), capture_output=True, text=True, timeout=120, check=True
    )
    return list(zip(given, json.loads(run.stdout), strict=True))


def _hex(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def test_the_rows_stand_where_the_page_puts_them(both: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    for answer, page in both:
        lay = Layout.of(len(answer["tokens"]))
        assert lay.xs == pytest.approx(page["xs"], abs=1e-12)
        z = page["z"]
        assert (lay.z_query, lay.z_key, lay.z_value, lay.z_output) == pytest.approx(
            (z["query"], z["key"], z["value"], z["output"]), abs=1e-12
        )


def test_every_arrow_points_where_the_pages_does(both: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    for answer, page in both:
        scene = AttentionScene(answer["tokens"])
        scene.update(answer, STEPS["mix"], 0)
        drawn = page["drawn"]
        for name, arrows, scale in (
            ("q", scene.q_arrows, page["scale"]),
            ("k", scene.k_arrows, page["scale"]),
            ("v", scene.v_arrows, page["valueScale"]),
        ):
            for i, arrow in enumerate(arrows):
                row = [*drawn[name][i], 0.0][:2]
                assert arrow.vec[:2] == pytest.approx([c * scale for c in row], abs=1e-9), (name, i)
        z = [*drawn["output"][0], 0.0][:2]
        assert scene.output_arrow.vec[:2] == pytest.approx([c * page["valueScale"] for c in z], abs=1e-9)


def test_every_link_and_line_of_arithmetic_matches(both: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    checked = 0
    for answer, page in both:
        scene = AttentionScene(answer["tokens"])
        for step_id, step in STEPS.items():
            for focus, want in enumerate(page["steps"][step_id]):
                scene.update(answer, step, focus)
                where = f"{answer['tokens'][focus]!r} at {step_id}"
                assert scene.link_radii() == pytest.approx(want["radius"], abs=1e-12), where
                for rod, colour in zip(scene.links, want["colour"], strict=True):
                    got = _hex(rod.mesh.material.color)
                    assert max(abs(a - b) for a, b in zip(got, _hex(colour), strict=True)) <= 1, where
                labels = {str(j): lb.texture.string for j, lb in enumerate(scene.link_labels) if lb.sprite.visible}
                assert labels == want["labels"], where
                title, lines, check = arithmetic(answer, step, focus)
                page_lines = [(x["key"], x["text"], bool(x.get("hidden"))) for x in want["arithmetic"]["lines"]]
                assert (title, lines, check) == (want["arithmetic"]["title"], page_lines, want["arithmetic"]["check"])
                checked += 1
    assert checked == 5 * (5 + 5 + 5 + 16)  # every step, every query of every answer
