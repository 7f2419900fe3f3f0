"""POST /api/lesson/tiles: every block's m, l, o for every query, the same output as POST /api/attention
for the same q, k, v to 1e-12 (hand-set, the examples, a sentence through all-MiniLM-L6-v2), the
numbers held at once, and bad input refused naming the field."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from app.examples import EXAMPLES
from tests.budget import examples

CAT = EXAMPLES["the-cat-ate-its-fish"]
ANIMAL = "The animal didn't cross the street because it was too tired."  # 16 tokens for all-MiniLM-L6-v2


def _tiles(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/api/lesson/tiles", json=body)
    assert r.status_code == 200, r.json()
    answer: dict[str, Any] = r.json()
    return answer


def _plain(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/api/attention", json=body)
    assert r.status_code == 200, r.json()
    answer: dict[str, Any] = r.json()
    return answer


def _equal_to_1e12(a: Any, b: Any) -> None:
    np.testing.assert_allclose(np.array(a, dtype=float), np.array(b, dtype=float), rtol=1e-12, atol=1e-12)


def test_the_default_is_the_lesson_example_in_blocks_of_2(client: TestClient) -> None:
    d = _tiles(client, {})
    assert (d["source"], d["example"], d["tokens"], d["mask"], d["block"]) == (
        "example",
        "the-cat-ate-its-fish",
        ["the", "cat", "ate", "its", "fish"],
        "full",
        2,
    )
    assert (d["d_k"], d["d_v"], d["blocks"]) == (2, 2, [[0, 2], [2, 4], [4, 5]])
    assert [len(s["scores"][0]) for s in d["steps"]] == [2, 2, 1]  # the last block is short
    for s in d["steps"]:
        assert len(s["m"]) == len(s["l"]) == len(s["alpha"]) == len(s["top"]) == 5
        assert np.array(s["o"]).shape == (5, 2) and np.array(s["p"]).shape == (5, s["stop"] - s["start"])
    # "its": m = 6/√2 from the first block on, the output the lesson's z
    assert [s["m"][3] for s in d["steps"]] == [6 / math.sqrt(2)] * 3
    assert np.round(d["output"][3], 3).tolist() == [0.903, 0.059]
    assert np.round(d["weights"][3], 3).tolist() == [0.013, 0.895, 0.013, 0.026, 0.053]
    # the memory counter: 10 scores at once instead of 25; 4,096 tokens in blocks of 128
    assert d["held"] == {
        "tokens": 5,
        "block": 2,
        "d_v": 2,
        "tile": 10,
        "table": 25,
        "running": 20,
        "bytes_per_number": 8,
    }
    assert d["long"] == {
        "tokens": 4096, "block": 128, "d_v": 64, "tile": 524_288, "table": 16_777_216, "running": 4096 * 66,
        "bytes_per_number": 4,
    }  # fmt: skip


@pytest.mark.parametrize("mask", ["full", "causal"])
@pytest.mark.parametrize("block", [1, 2, 3, 4, 5])
def test_the_example_equals_post_attention(client: TestClient, mask: str, block: int) -> None:
    d = _tiles(client, {"example": CAT.id, "block": block, "mask": mask})
    ref = _plain(client, {"q": CAT.q.tolist(), "k": CAT.k.tolist(), "v": CAT.v.tolist(), "mask": mask})
    _equal_to_1e12(d["output"], ref["output"])
    _equal_to_1e12(d["weights"], ref["weights"])
    assert d["q"] == ref["q"] and d["k"] == ref["k"] and d["v"] == ref["v"]
    # the blocks' scores, side by side, are the masked table (null where hidden), cell for cell
    scores: list[list[float | None]] = [[x for s in d["steps"] for x in s["scores"][i]] for i in range(5)]
    assert [[x is None for x in row] for row in scores] == [[x is None for x in row] for row in ref["masked"]]
    _equal_to_1e12(
        [[0 if x is None else x for x in row] for row in scores],
        [[0 if x is None else x for x in row] for row in ref["masked"]],
    )


def test_causal_hidden_keys_are_null_and_change_nothing(client: TestClient) -> None:
    d = _tiles(client, {"block": 2, "mask": "causal"})
    late = d["steps"][2]  # "fish": only the last query sees it
    assert late["scores"] == [[None], [None], [None], [None], late["scores"][4]] and late["scores"][4][0] is not None
    assert late["top"][:4] == [None] * 4 and late["alpha"][:4] == [1.0] * 4 and late["p"][:4] == [[0.0]] * 4
    assert late["l"][:4] == d["steps"][1]["l"][:4]
    assert d["output"][1] == [0.5, 0.0]  # "cat" splits 50 / 50 between "the" and itself


def test_the_decoder_example_is_causal_by_its_own_mask(client: TestClient) -> None:
    sql = EXAMPLES["select-from-customers"]
    d = _tiles(client, {"example": sql.id, "block": 3})
    assert d["mask"] == "causal" and d["blocks"] == [[0, 3], [3, 4]]
    ref = _plain(client, {"q": sql.q.tolist(), "k": sql.k.tolist(), "v": sql.v.tolist(), "mask": "causal"})
    _equal_to_1e12(d["output"], ref["output"])


values = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@st.composite
def hand_set(draw: st.DrawFn) -> dict[str, Any]:
    n, d_k, d_v = draw(st.integers(1, 9)), draw(st.integers(1, 5)), draw(st.integers(1, 4))
    q, k = (draw(arrays(np.float64, (n, d_k), elements=values)) for _ in range(2))
    v = draw(arrays(np.float64, (n, d_v), elements=values))
    return {"q": q.tolist(), "k": k.tolist(), "v": v.tolist(), "mask": draw(st.sampled_from(["full", "causal"]))}


@settings(max_examples=examples(40, 15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hand_set(), st.integers(1, 9))
def test_hand_set_equals_post_attention(client: TestClient, body: dict[str, Any], block: int) -> None:
    n = len(body["q"])
    block = min(block, n)
    d = _tiles(client, {**body, "block": block})
    ref = _plain(client, body)
    _equal_to_1e12(d["output"], ref["output"])
    assert d["tokens"] == [f"t{i}" for i in range(n)] and d["source"] == "qkv"
    assert len(d["steps"]) == math.ceil(n / block) and d["held"]["tile"] == n * block and d["held"]["table"] == n * n


@pytest.mark.parametrize(("layer", "head", "block"), [(3, 1, 4), (0, 0, 1), (5, 11, 16)])
def test_a_sentence_equals_post_attention_for_its_layer_and_head(
    client: TestClient, layer: int, head: int, block: int
) -> None:
    d = _tiles(client, {"sentence": ANIMAL, "layer": layer, "head": head, "block": block})
    ref = _plain(client, {"sentence": ANIMAL, "layer": layer, "head": head})
    assert (d["source"], d["model"], d["kind"], d["layer"], d["head"]) == (
        "sentence",
        "all-MiniLM-L6-v2",
        "bert",
        layer,
        head,
    )
    assert d["tokens"] == ref["tokens"] and d["mask"] == ref["mask"] == "full" and d["d_k"] == 32
    assert d["q"] == ref["q"] and d["k"] == ref["k"] and d["v"] == ref["v"]
    _equal_to_1e12(d["output"], ref["output"])
    _equal_to_1e12(d["weights"], ref["weights"])
    n = len(d["tokens"])
    assert len(d["steps"]) == math.ceil(n / block)


def test_a_sentence_under_the_causal_mask(client: TestClient) -> None:
    d = _tiles(client, {"sentence": ANIMAL, "layer": 3, "head": 1, "mask": "causal", "block": 5})
    ref = _plain(client, {"sentence": ANIMAL, "layer": 3, "head": 1, "mask": "causal"})
    assert d["mask"] == "causal"
    _equal_to_1e12(d["output"], ref["output"])


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"block": 0}, "block", "greater than or equal to 1"),
        ({"block": -1}, "block", "greater than or equal to 1"),
        ({"block": 6}, "block", "1 … 5: keys per block, and there are 5 keys"),  # 5 words
        ({"block": 2.5}, "block", "integer"),
        ({"block": "2"}, "block", "integer"),
        ({"example": "nope"}, "example", "the-cat-ate-its-fish"),
        ({"example": CAT.id, "sentence": "hi"}, "sentence", "not example and sentence"),
        ({"q": [[1.0]], "k": [[1.0]], "v": [[1.0]], "example": CAT.id}, "example", "not q, k, v and example"),
        ({"q": [[1.0]], "k": [[1.0]]}, "v", "v is required"),
        ({"q": [[1.0, 2.0]], "k": [[1.0]], "v": [[1.0]]}, "k", "shape of q"),
        ({"q": [[1.0]], "k": [[1.0]], "v": [[1.0], [2.0]]}, "v", "1 rows"),
        ({"q": [[[1.0]]], "k": [[[1.0]]], "v": [[[1.0]]]}, "q", "one head"),
        ({"q": [[1.0]] * 65, "k": [[1.0]] * 65, "v": [[1.0]] * 65}, "q", "64 rows"),
        ({"q": [[1e200, 1e200]], "k": [[1e200, 1e200]], "v": [[1.0]], "block": 1}, "q", "overflow"),
        ({"q": [[1.0]], "k": [[1.0]], "v": [[1.0]], "tokens": ["a", "b"]}, "tokens", "2 labels"),
        ({"tokens": ["a"]}, "tokens", "hand-set"),
        ({"layer": 2}, "layer", "goes with sentence"),
        ({"head": 1, "example": CAT.id}, "head", "goes with sentence"),
        ({"sentence": ANIMAL, "layer": 6}, "layer", "0 … 5"),
        ({"sentence": ANIMAL, "head": 12}, "head", "0 … 11"),
        ({"sentence": "   "}, "sentence", "empty"),
        ({"sentence": " ".join(["word"] * 70)}, "sentence", "this view takes 64"),
        ({"sentence": ANIMAL, "block": 17}, "block", "1 … 16"),
        ({"mask": "diagonal"}, "mask", "full"),
        ({"surprise": 1}, "surprise", "Extra inputs"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(client: TestClient, body: dict[str, Any], field: str, words: str) -> None:
    r = client.post("/api/lesson/tiles", json=body)
    assert r.status_code == 422, r.json()
    detail = r.json()["detail"][0]
    assert detail["loc"] == ["body", field], detail
    assert words in detail["msg"], detail


def test_not_json_is_a_415(client: TestClient) -> None:
    r = client.post("/api/lesson/tiles", content=b"block=2", headers={"content-type": "text/plain"})
    assert r.status_code == 415
