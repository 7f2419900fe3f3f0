"""The notebook's look inside a model: rollout(), lens() and show(…, ablate=…) give the API's numbers
(POST /api/rollout, /api/lens, /api/ablate) and draw them; bad input names the field."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.schemas import InputError

notebook = pytest.importorskip("app.notebook", reason="the notebook extra is not installed")

ANIMAL = "The animal didn't cross the street because it was too tired."
PROMPT = "The capital of France is"


@pytest.fixture(autouse=True)
def numpy_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_BACKEND", "numpy")


def test_rollout_is_the_apis(api: TestClient) -> None:
    view = notebook.rollout(ANIMAL, focus="it")
    r = api.post("/api/rollout", json={"sentence": ANIMAL, "focus": 10})
    assert r.status_code == 200, r.text
    assert view.result == r.json()
    tokens, layers = view.result["tokens"], len(view.result["layers"])
    # a point per token of every layer and the input, the focus's paths as line segments (two ends each)
    positions = view.scene.points.geometry.attributes["position"].array
    assert positions.shape == ((layers + 1) * len(tokens), 3)
    lines = view.scene.lines.geometry.attributes["position"].array
    assert lines.shape == (2 * len(view.result["focus_paths"]["edges"]), 3)
    # the darkest point of the input row is the token the focus takes most from
    colours = view.scene.points.geometry.attributes["color"].array[: len(tokens)]
    darkest = int(np.argmin(colours.sum(axis=1)))
    assert darkest == int(np.argmax(view.result["focus_paths"]["through"][0]))
    assert "following 'it'" in view.children[0].value


def test_flow_on_the_decoder(api: TestClient) -> None:
    view = notebook.rollout("The cat ate its fish.", model="smollm2-135m", method="flow")
    body = {"sentence": "The cat ate its fish.", "model": "smollm2-135m", "method": "flow", "focus": 5}
    r = api.post("/api/rollout", json=body)
    assert view.result == r.json()
    assert view.result["method"] == "flow" and view.result["focus"] == 5  # the last token by default


def test_lens_is_the_apis(api: TestClient) -> None:
    view = notebook.lens(PROMPT)
    r = api.post("/api/lens", json={"prompt": PROMPT})
    assert view.result == r.json()
    assert len(view.bars) == 31
    top = [g["top"][0]["p"] for g in view.result["layers"]]
    assert [b.scale[0] for b in view.bars] == pytest.approx([max(0.02, 3 * p) for p in top])
    marked = [label for label in view.labels if label.texture.color == "#b03a0a"]
    assert len(marked) == 1 and marked[0].texture.string == f"{view.result['first_top']}: Paris"


def test_show_with_heads_switched_off(api: TestClient) -> None:
    plain = notebook.show(sentence=ANIMAL, layer=5, head=0)
    view = notebook.show(sentence=ANIMAL, layer=5, head=0, ablate=[(1, 2), (3, 5)])
    a = api.post("/api/ablate", json={"sentence": ANIMAL, "heads": [[1, 2], [3, 5]], "layer": 5, "head": 0}).json()
    np.testing.assert_allclose(view.result["weights"], a["weights"]["after"], atol=5e-7)
    np.testing.assert_allclose(plain.result["weights"], a["weights"]["before"], atol=5e-7)
    assert np.abs(np.array(view.result["weights"]) - np.array(plain.result["weights"])).max() > 1e-3
    assert view.result["ablate"] == [[1, 2], [3, 5]]
    assert "switched off: layer 1 head 2, layer 3 head 5" in view.title.value
    # a layer below the first switched-off head is the model's own
    low = notebook.show(sentence=ANIMAL, layer=1, head=0, ablate=[(3, 5)])
    same = notebook.show(sentence=ANIMAL, layer=1, head=0)
    assert low.result["weights"] == same.result["weights"]


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: notebook.rollout(ANIMAL, method="paths"), "method"),
        (lambda: notebook.rollout(ANIMAL, focus="zebra"), "focus"),
        (lambda: notebook.rollout(ANIMAL, focus=99), "focus"),
        (lambda: notebook.rollout(ANIMAL, mask="diagonal"), "mask"),
        (lambda: notebook.rollout("x " * 70, model="smollm2-135m", method="flow"), "sentence"),  # 71 > 64
        (lambda: notebook.rollout(ANIMAL, model="gpt-9"), "model"),
        (lambda: notebook.lens(PROMPT, model="all-minilm-l6-v2"), "model"),
        (lambda: notebook.lens(PROMPT, position=40), "position"),
        (lambda: notebook.lens(PROMPT, position=-1), "position"),
        (lambda: notebook.show(sentence=ANIMAL, ablate=[(6, 0)]), "ablate"),
        (lambda: notebook.show(sentence=ANIMAL, ablate=[(1,)]), "ablate"),
        (lambda: notebook.show(ablate=[(1, 1)]), "ablate"),
    ],
)
def test_bad_input_names_the_field(call: Any, field: str) -> None:
    with pytest.raises(InputError) as e:
        call()
    assert e.value.field == field
