"""app.notebook.show(): its numbers are the API's to the last digit, and its controls move them and the scene."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.schemas import InputError
from tests.reference import attention_loops

# the notebook extra (pythreejs, ipywidgets): without it these tests skip, saying so
notebook = pytest.importorskip("app.notebook", reason="the notebook extra is not installed")
show = notebook.show
AttentionView = notebook.AttentionView
STEPS = pytest.importorskip("app.notebook.numbers").STEPS
heat_rgb = pytest.importorskip("app.notebook.markup").heat_rgb
table_html = pytest.importorskip("app.notebook.markup").table_html

ANIMAL = "The animal didn't cross the street because it was too tired."
TOKENS = ["the", "cat", "ate", "its", "fish"]
Q = [[1.5, 0], [0, 1.2], [1.2, 0], [2, 0], [0, 1.5]]
K = [[0, 0], [3, 0], [0, 3], [0.5, 0], [1, 0.5]]
V = [[0, 0], [1, 0], [0, 0.5], [0.3, 0], [0, 1]]


@pytest.fixture(scope="module")
def api() -> TestClient:
    return TestClient(create_app(backend="numpy"))


@pytest.fixture(autouse=True)
def numpy_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_BACKEND", "numpy")


def same_as_api(api: TestClient, view: Any, **body: Any) -> None:
    """The view's result is the API's answer: the same JSON, byte for byte once encoded."""
    r = api.post("/api/attention", json=body)
    assert r.status_code == 200, r.text
    assert view.result == r.json()
    assert orjson.dumps(view.result) == r.content


# --- each kind of input --------------------------------------------------------------------


def test_default_is_the_seed_example_and_equals_the_api(api: TestClient) -> None:
    view = show()
    assert isinstance(view, AttentionView)
    same_as_api(api, view, tokens=TOKENS, q=Q, k=K, v=V, mask="full")


def test_example_by_id(api: TestClient) -> None:
    from app.examples import EXAMPLES

    e = EXAMPLES["select-from-customers"]
    view = show("select-from-customers", mask="causal")
    same_as_api(api, view, tokens=list(e.tokens), q=e.q.tolist(), k=e.k.tolist(), v=e.v.tolist(), mask="causal")


def test_hand_set_lists_and_arrays(api: TestClient) -> None:
    q = [[1.0, -2.0, 0.5], [0.25, 3.0, -1.0], [2.0, 2.0, 2.0]]
    k = [[0.5, 1.0, -1.0], [1.5, -0.5, 2.0], [-3.0, 0.0, 1.0]]
    v = [[1.0, 2.0], [3.0, -4.0], [0.1, 0.2]]
    same_as_api(api, show(tokens=["a", "b", "c"], q=q, k=k, v=v), tokens=["a", "b", "c"], q=q, k=k, v=v)
    arrays = show(q=np.array(q), k=np.array(k), v=np.array(v), mask="causal")
    same_as_api(api, arrays, q=q, k=k, v=v, mask="causal")  # tokens default to t0, t1, … as in the API
    assert arrays.result["tokens"] == ["t0", "t1", "t2"]


def test_sentence_equals_the_api(api: TestClient) -> None:
    view = show(sentence=ANIMAL, layer=3, head=1, focus="it", step="softmax")
    same_as_api(api, view, sentence=ANIMAL, layer=3, head=1, mask="full")
    it = view.result["tokens"].index("it")
    assert view.focus == it
    weights = dict(zip(view.result["tokens"], view.result["weights"][it], strict=True))
    assert round(weights["animal"], 3) == 0.677  # the README's "it" finds "animal"


def test_sentence_means(api: TestClient) -> None:
    view = show(sentence="the cat sat on the mat", layer="mean", head="mean")
    same_as_api(api, view, sentence="the cat sat on the mat", layer="mean", head="mean", mask="full")
    assert view.result["mean_over"] == ["heads", "layers"]
    assert "mean over the heads and layers" in view.arithmetic.value


# --- the seed's numbers, against an independent reference ----------------------------------------


def test_the_seeds_numbers() -> None:
    view = show(focus="its", step="softmax")
    ref = attention_loops(np.array(Q, float), np.array(K, float), np.array(V, float), causal=False)
    np.testing.assert_allclose(view.result["weights"], ref["weights"], rtol=0, atol=1e-15)
    assert [round(w, 3) for w in view.result["weights"][3]] == [0.013, 0.895, 0.013, 0.026, 0.053]
    assert [round(z, 3) for z in view.result["output"][3]] == [0.903, 0.059]
    assert "0.013 + 0.895 + 0.013 + 0.026 + 0.053 = 1.000" in view.arithmetic.value
    view.mask_control.value = "causal"
    view.focus_control.value = 1
    assert view.result["weights"][1] == [0.5, 0.5, 0.0, 0.0, 0.0]  # "cat" splits 50/50
    assert view.result["masked"][1][2:] == [None, None, None]  # −∞ as the API writes it


# --- the controls ----------------------------------------------------------------------------


def test_mask_control_changes_result_and_hides_later_links(api: TestClient) -> None:
    view = show(focus=1, step="mask")
    assert all(r > 0 for r in view.scene.link_radii())
    view.mask_control.value = "causal"
    same_as_api(api, view, tokens=TOKENS, q=Q, k=K, v=V, mask="causal")
    radii = view.scene.link_radii()
    assert radii[:2] == [pytest.approx(0.03 + 0.15 * 0.5)] * 2  # both visible scores equal: the middle
    assert radii[2:] == [0.0, 0.0, 0.0]
    assert [rod.mesh.visible for rod in view.scene.links] == [True, True, False, False, False]
    view.step_control.value = "softmax"
    assert [rod.mesh.visible for rod in view.scene.links] == [True, True, False, False, False]
    view.mask_control.value = "full"
    same_as_api(api, view, tokens=TOKENS, q=Q, k=K, v=V, mask="full")
    assert all(rod.mesh.visible for rod in view.scene.links)


def test_link_thickness_follows_the_weights() -> None:
    view = show(focus="its", step="softmax")
    weights = view.result["weights"][3]
    radii = view.scene.link_radii()
    assert radii == pytest.approx([0.025 + 0.2 * math.sqrt(w) for w in weights])
    assert np.argmax(radii) == 1  # the thickest link goes to "cat"
    # each link runs from the focused query to its key, as long as the distance between them
    lay = view.scene.lay
    for j, rod in enumerate(view.scene.links):
        assert rod.length == pytest.approx(math.hypot(lay.xs[j] - lay.xs[3], lay.z_key - lay.z_query))
        assert rod.mesh.position[0] == pytest.approx((lay.xs[j] + lay.xs[3]) / 2)


def test_step_control_changes_links_table_and_arithmetic() -> None:
    view = show(focus="its")
    before = view.result
    score_radii = view.scene.link_radii()
    scores = view.result["scores"][3]  # [0, 6, 0, 1, 2]: thickness by place in the row's range
    assert score_radii == pytest.approx([0.03 + 0.15 * (s - min(scores)) / (max(scores) - min(scores)) for s in scores])
    assert "2·3 + 0·0 = 6" in view.arithmetic.value
    view.step_control.value = "scale"
    assert "6 / √2 = 4.243" in view.arithmetic.value
    assert "Scaled scores" in view.table.value
    view.step_control.value = "softmax"
    assert view.scene.link_radii() != score_radii
    assert "Weights after softmax" in view.table.value and "Σ row" in view.table.value
    assert not view.scene.output_arrow.shaft.mesh.visible
    view.step_control.value = "mix"
    assert view.scene.output_arrow.shaft.mesh.visible and view.scene.output_marker.visible
    z = view.result["output"][3]
    # z drawn in the value plane, on the values' scale: the longest v is 2.1 units
    assert view.scene.output_arrow.vec[:2] / 2.1 == pytest.approx(np.array(z) / 1.0)
    assert "z = [0.903, 0.059]" in view.arithmetic.value
    assert view.result is before  # the step picks what is shown; the numbers are the same answer


def test_focus_control_moves_the_links_and_the_arithmetic() -> None:
    view = show(step="softmax")
    lay = view.scene.lay
    assert view.scene.links[0].mesh.position[0] == pytest.approx(lay.xs[0] / 1)  # from "the" to "the"
    view.focus_control.value = 3
    assert view.scene.links[3].mesh.position[0] == pytest.approx(lay.xs[3])
    assert view.scene.query_markers[3].scale == (0.42, 0.42, 0.42)
    assert view.scene.query_markers[0].scale == (0.32, 0.32, 0.32)
    assert "Weights of “its”" in view.arithmetic.value
    assert "aria-current=true" in table_html(view.result, STEPS["softmax"], 3)


def test_layer_and_head_controls_follow_the_api(api: TestClient) -> None:
    view = show(sentence=ANIMAL, step="softmax", focus="it")
    assert view.layer_control is not None and view.head_control is not None
    assert view.layer_control.options[-1] == ("mean", "mean") and len(view.layer_control.options) == 7
    assert len(view.head_control.options) == 13
    radii = view.scene.link_radii()
    view.layer_control.value = 3
    view.head_control.value = 1
    same_as_api(api, view, sentence=ANIMAL, layer=3, head=1, mask="full")
    assert view.scene.link_radii() != radii
    view.head_control.value = "mean"
    view.mask_control.value = "causal"
    same_as_api(api, view, sentence=ANIMAL, layer=3, head="mean", mask="causal")
    it = view.result["tokens"].index("it")
    assert view.scene.link_radii()[it + 1 :] == [0.0] * (len(view.result["tokens"]) - it - 1)


# --- the table's colours and text ------------------------------------------------------------


def test_table_uses_the_pages_cividis_and_escapes_tokens() -> None:
    assert heat_rgb(0) == (0xFE, 0xE8, 0x38) and heat_rgb(1) == (0x00, 0x22, 0x4E)  # light = little, dark = more
    assert heat_rgb(0.5) == (0x7D, 0x7C, 0x76)  # between samples 4 and 5, as the page's heatRgb rounds
    evil = ["<img src=x onerror=alert(1)>", "&amp;", "b"]
    view = show(tokens=evil, q=[[1, 0], [0, 1], [1, 1]], k=[[1, 0], [0, 1], [1, 1]], v=[[1, 0], [0, 1], [1, 1]])
    for html in (view.table.value, view.arithmetic.value, view.title.value):
        assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in view.table.value
    assert "&amp;amp;" in view.table.value
    # the scene draws the text into a texture, as text
    assert view.scene.query_labels[0].texture.string == evil[0]


# --- bad input: a ValueError naming the field ----------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        ({"example": "nope"}, "example", "no example 'nope'"),
        ({"q": [[1, 2]], "k": [[1]], "v": [[1]]}, "k", "must have the shape of q"),
        ({"q": [[1, 2]], "k": [[1, 2]]}, "v", "v is missing"),
        ({"tokens": ["a", "b"]}, "q", "q is missing"),
        ({"q": [[1, float("nan")]], "k": [[1, 2]], "v": [[1]]}, "q", "finite"),
        ({"tokens": ["a"], "q": [[1]], "k": [[1]], "v": [[1]], "example": "the-cat-ate-its-fish"}, "q", "not both"),
        ({"sentence": "hi", "q": [[1]]}, "q", "cannot be sent with sentence"),
        ({"sentence": "hi", "layer": 99}, "layer", "layer must be 0 … 5"),
        ({"sentence": "hi", "head": -1}, "head", "0-based integer"),
        ({"sentence": "   "}, "sentence", "empty"),
        ({"mask": "upper"}, "mask", "full"),
        ({"step": "nope"}, "step", "score"),
        ({"focus": 5}, "focus", "0 … 4"),
        ({"focus": "dog"}, "focus", "not one of the tokens"),
        ({"q": np.ones((2, 3, 2)), "k": np.ones((2, 3, 2)), "v": np.ones((2, 3, 2))}, "q", "one head"),
        ({"q": np.ones((65, 2)), "k": np.ones((65, 2)), "v": np.ones((65, 2))}, "q", "at most 64"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict[str, Any], field: str, fragment: str) -> None:
    with pytest.raises(InputError) as e:
        show(**kwargs)
    assert e.value.field == field
    assert fragment in e.value.message


def test_the_guessable_import_name() -> None:
    import attention3d
    from app.notebook import show as app_show

    assert attention3d.show is app_show


def test_a_decoder_keeps_its_causal_mask(tiny_gpt2_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_MODEL", str(tiny_gpt2_dir))
    sentence = "The quick brown fox jumps."
    view = show(sentence=sentence, layer=1, head=1, step="softmax")
    api = TestClient(create_app(backend="numpy", model=str(tiny_gpt2_dir)))
    same_as_api(api, view, sentence=sentence, layer=1, head=1)  # no mask sent: the model's own
    assert view.result["kind"] == "gpt2" and view.result["mask"] == "causal"
    assert view.mask_control.value == "causal" and view.mask_control.disabled
    assert [len(c.options) for c in (view.layer_control, view.head_control)] == [3, 3]  # 2 each, and mean
    assert view.scene.link_radii()[1:] == [0.0] * (len(view.result["tokens"]) - 1)  # the first token sees itself
    view.layer_control.value = "mean"
    same_as_api(api, view, sentence=sentence, layer="mean", head=1, mask="causal")


def test_the_wheel_carries_the_import_name_and_the_pinned_extra() -> None:
    config = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert "attention3d" in config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    extra = config["project"]["optional-dependencies"]["notebook"]
    assert {"pythreejs==2.4.2", "ipywidgets==8.1.9", "jupyterlab_widgets==3.0.17"} <= set(extra)
    assert "attention-3d[notebook]" in config["project"]["optional-dependencies"]["test"]


def test_arrows_stand_in_their_rows_on_the_pages_scales() -> None:
    view = show()
    scene, lay = view.scene, view.scene.lay
    assert lay.z_query > lay.z_key > lay.z_value  # queries in front, keys behind, values behind the keys
    # q and k share a scale (longest: k of "cat", [3, 0], drawn 2.1 long), v and z another (longest 1)
    k_cat = scene.k_arrows[1]
    assert k_cat.vec == pytest.approx([2.1, 0, 0])
    assert k_cat.shaft.mesh.position[2] == pytest.approx(lay.z_key)
    assert scene.q_arrows[3].vec == pytest.approx([2 * 2.1 / 3, 0, 0])  # q of "its", [2, 0]
    assert scene.q_arrows[3].shaft.mesh.position[2] == pytest.approx(lay.z_query)
    assert scene.v_arrows[4].vec == pytest.approx([0, 2.1, 0])  # v of "fish", [0, 1]
    assert scene.v_arrows[4].head.mesh.position[2] == pytest.approx(lay.z_value)
    assert not scene.v_arrows[0].shaft.mesh.visible  # v of "the" is [0, 0]: no arrow
    # the camera has the renderer's aspect (pythreejs's default of 1 would squash the view)
    assert (
        scene.camera.aspect == pytest.approx(scene.renderer.width / scene.renderer.height) and scene.camera.aspect > 1
    )


def test_a_new_head_moves_the_arrows() -> None:
    view = show(sentence="the cat sat on the mat", layer=0, head=0)
    before = [a.vec.copy() for a in view.scene.q_arrows]
    view.head_control.value = 5
    after = [a.vec for a in view.scene.q_arrows]
    assert any(not np.allclose(a, b) for a, b in zip(before, after, strict=True))
