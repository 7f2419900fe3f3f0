"""The sentence mode of POST /api/attention, POST /api/heads and GET /api/model."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app import frame, limits
from app.attention import attention
from app.model.loader import ModelHandle

ANIMAL = "The animal didn't cross the street because it was too tired."
STAGES = ("q", "k", "v", "scores", "scaled", "masked", "weights", "output")


def post(client: TestClient, **body: Any) -> Any:
    r = client.post("/api/attention", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def rejected(client: TestClient, body: Any, field: str, path: str = "/api/attention") -> str:
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail[0]["loc"][:2] == ["body", field], detail
    return str(detail[0]["msg"])


def test_one_head(api: TestClient, minilm: ModelHandle) -> None:
    j = post(api, sentence=ANIMAL, layer=3, head=1)
    assert j["model"] == "all-MiniLM-L6-v2" and j["kind"] == "bert"
    assert (j["layer"], j["head"], j["mask"], j["d_k"], j["mean_over"]) == (3, 1, "full", 32, [])
    n = len(j["tokens"])
    assert j["tokens"][:3] == ["[CLS]", "the", "animal"] and j["tokens"][-1] == "[SEP]"
    assert j["words"][0] is None and j["words"][1:3] == [0, 1] and j["spans"][2] == [4, 10]
    for name in STAGES:
        assert np.array(j[name]).shape == ((n, 32) if name in ("q", "k", "v", "output") else (n, n)), name
    # The numbers are the model's own: q is head 1's slice of layer 3's query projection.
    trace = minilm.model().forward(minilm.encode(ANIMAL).ids)
    np.testing.assert_array_equal(np.array(j["q"], dtype=np.float32), trace.q[3][1])
    ref = attention(trace.q[3][1], trace.k[3][1], trace.v[3][1])
    np.testing.assert_allclose(np.array(j["weights"]), ref.weights, rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.array(j["scaled"]), np.array(j["scores"]) / np.sqrt(32), rtol=1e-12)


def test_it_finds_animal(api: TestClient) -> None:
    """Layer 3, head 1 (0-based) of all-MiniLM-L6-v2 resolves "it" to "animal" (0.677; "street" 0.050)."""
    j = post(api, sentence=ANIMAL, layer=3, head=1)
    it, animal, street = (j["tokens"].index(t) for t in ("it", "animal", "street"))
    row = np.array(j["weights"][it])
    assert row.argmax() == animal
    assert row[animal] == pytest.approx(0.6768, abs=2e-3)
    assert row[street] == pytest.approx(0.0502, abs=2e-3)
    # Layer 5, head 11 agrees (0.673), and there "it" still prefers "animal" when the street is "wide".
    j = post(api, sentence=ANIMAL, layer=5, head=11)
    assert np.array(j["weights"][it]).argmax() == animal


def test_all_heads_and_means(api: TestClient) -> None:
    sentence = "Hello there, general Kenobi."
    every = {layer: post(api, sentence=sentence, layer=layer) for layer in range(6)}
    w = np.array([every[layer]["weights"] for layer in range(6)])  # (6, 12, n, n)
    n = w.shape[-1]
    assert w.shape == (6, 12, n, n) and every[0]["head"] is None and np.array(every[0]["q"]).shape == (12, n, 32)
    np.testing.assert_allclose(w.sum(-1), 1, atol=1e-12)

    j = post(api, sentence=sentence, layer=2, head="mean")
    assert j["mean_over"] == ["heads"] and j["head"] == "mean"
    np.testing.assert_allclose(j["weights"], w[2].mean(0), atol=1e-12)
    np.testing.assert_allclose(j["output"], np.array(every[2]["output"]).mean(0), atol=1e-12)
    np.testing.assert_allclose(j["q"], np.array(every[2]["q"]).mean(0), atol=1e-6)

    j = post(api, sentence=sentence, layer="mean", head=4)
    assert j["mean_over"] == ["layers"] and j["layer"] == "mean"
    np.testing.assert_allclose(j["weights"], w[:, 4].mean(0), atol=1e-12)

    j = post(api, sentence=sentence, layer="mean", head="mean")
    assert j["mean_over"] == ["heads", "layers"]
    np.testing.assert_allclose(j["weights"], w.mean((0, 1)), atol=1e-12)
    np.testing.assert_allclose(np.array(j["weights"]).sum(-1), 1, atol=1e-12)

    j = post(api, sentence=sentence, layer="mean")
    assert np.array(j["weights"]).shape == (12, n, n)
    np.testing.assert_allclose(j["weights"], w.mean(0), atol=1e-12)


def test_defaults_and_causal_toggle(api: TestClient) -> None:
    j = post(api, sentence="it was late")
    assert j["layer"] == 0 and j["head"] is None and j["mask"] == "full"
    j = post(api, sentence="it was late", layer=1, head=0, mask="causal")
    masked, weights = j["masked"], np.array(j["weights"])
    assert j["mask"] == "causal" and masked[0][1] is None  # −∞ is null in JSON
    assert np.all(np.triu(weights, 1) == 0)
    np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-12)


@pytest.mark.parametrize(("layer", "head"), [(3, 1), (2, "mean"), ("mean", 7), ("mean", "mean")])
def test_causal_masked_is_the_full_scaled_hidden_after_the_query(api: TestClient, layer: Any, head: Any) -> None:
    """The page asks the causal mask for its weights and output only and makes `masked` itself from
    the full answer's `scaled` (static/js/model.js causalMasked): that must be the server's own
    causal `masked`, bit for bit, for a head and for every kind of mean."""

    def stages(mask: str) -> dict[str, np.ndarray]:
        body = {"sentence": ANIMAL, "layer": layer, "head": head, "mask": mask}
        r = api.post("/api/attention", json=body, headers={"accept": frame.FRAME_MEDIA_TYPE})
        assert r.status_code == 200, r.text
        return frame.decode(r.content)[1]

    full, causal = stages("full"), stages("causal")
    n = full["scaled"].shape[0]
    hidden_after = np.triu(np.ones((n, n), dtype=bool), 1)  # key j > query i
    np.testing.assert_array_equal(causal["masked"], np.where(hidden_after, -np.inf, full["scaled"]))
    np.testing.assert_array_equal(causal["scaled"], full["scaled"])


@pytest.mark.parametrize(("layer", "head", "mask"), [(3, 1, "full"), (0, 0, "full"), (5, 11, "causal")])
def test_scaled_is_the_scores_over_the_root_of_d_k(api: TestClient, layer: int, head: int, mask: str) -> None:
    """A view of one head leaves `scaled` out of its frame and the page divides it out of `scores`
    (static/js/model.js scaledFrom: x / Math.sqrt(d_k), IEEE-exact as NumPy's): that must be the
    server's own `scaled`, bit for bit."""
    body = {"sentence": ANIMAL, "layer": layer, "head": head, "mask": mask}
    r = api.post("/api/attention", json=body, headers={"accept": frame.FRAME_MEDIA_TYPE})
    fields, arrays = frame.decode(r.content)
    np.testing.assert_array_equal(arrays["scaled"], arrays["scores"] / math.sqrt(fields["d_k"]))


def test_a_mean_view_s_scaled_is_not_its_scores_over_the_root_of_d_k(api: TestClient) -> None:
    """Why a mean view asks for its scaled scores: the mean of each head's scores / √d_k is not, to
    the bit, the mean score / √d_k (so the page does not make it)."""
    body = {"sentence": ANIMAL, "layer": 2, "head": "mean"}
    r = api.post("/api/attention", json=body, headers={"accept": frame.FRAME_MEDIA_TYPE})
    fields, arrays = frame.decode(r.content)
    assert not np.array_equal(arrays["scaled"], arrays["scores"] / math.sqrt(fields["d_k"]))


def test_frame_answer(api: TestClient) -> None:
    r = api.post(
        "/api/attention", json={"sentence": ANIMAL, "layer": 3, "head": 1}, headers={"accept": frame.FRAME_MEDIA_TYPE}
    )
    assert r.status_code == 200 and r.headers["content-type"] == frame.FRAME_MEDIA_TYPE
    fields, arrays = frame.decode(r.content)
    assert fields["layer"] == 3 and fields["words"][0] is None and arrays["weights"].shape == (16, 16)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"sentence": ANIMAL, "q": [[1.0]]}, "q"),
        ({"sentence": ANIMAL, "k": [[1.0]], "v": [[1.0]]}, "k"),
        ({"sentence": ANIMAL, "tokens": ["a"]}, "tokens"),
        ({"sentence": ""}, "sentence"),
        ({"sentence": "   \n\t "}, "sentence"),
        ({"sentence": "\u200b\x00"}, "sentence"),
        ({"sentence": "x" * (limits.MAX_SENTENCE_CHARS + 1)}, "sentence"),
        ({"sentence": "word " * 600}, "sentence"),
        ({"sentence": 42}, "sentence"),
        ({"sentence": ANIMAL, "layer": 6}, "layer"),
        ({"sentence": ANIMAL, "layer": -1}, "layer"),
        ({"sentence": ANIMAL, "layer": "2"}, "layer"),
        ({"sentence": ANIMAL, "layer": 1.5}, "layer"),
        ({"sentence": ANIMAL, "layer": True}, "layer"),
        ({"sentence": ANIMAL, "head": 12}, "head"),
        ({"sentence": ANIMAL, "head": "max"}, "head"),
        ({"sentence": ANIMAL, "mask": "none"}, "mask"),
        ({"layer": 1, "head": 2}, "layer"),
        ({"head": 2}, "head"),
        ({}, "q"),
        ({"sentence": ANIMAL, "extra": 1}, "extra"),
    ],
)
def test_bad_input_is_422_naming_the_field(api: TestClient, body: Any, field: str) -> None:
    rejected(api, body, field)


def test_too_long_says_how_long(api: TestClient) -> None:
    msg = rejected(api, {"sentence": "word " * 600}, "sentence")
    assert "602 tokens" in msg and "512" in msg
    j = post(api, sentence="word " * 510, layer=5, head=0)  # 512 with [CLS] and [SEP]: the most it reads
    assert len(j["tokens"]) == 512


def test_hand_set_mode_unchanged(api: TestClient) -> None:
    j = post(api, q=[[1.0, 0.0], [0.0, 1.0]], k=[[1.0, 0.0], [0.0, 1.0]], v=[[1.0], [2.0]])
    assert j["tokens"] == ["t0", "t1"] and "model" not in j


def test_heads_overview(api: TestClient) -> None:
    r = api.post("/api/heads", json={"sentence": ANIMAL})
    assert r.status_code == 200
    j = r.json()
    w = np.array(j["weights"])
    n = len(j["tokens"])
    assert (j["layers"], j["heads"], j["mask"], j["decimals"]) == (6, 12, "full", 3) and w.shape == (6, 12, n, n)
    np.testing.assert_allclose(w.sum(-1), 1, atol=n * 5e-4)
    one = post(api, sentence=ANIMAL, layer=3, head=1)
    np.testing.assert_allclose(w[3, 1], one["weights"], atol=5e-4)
    assert j["words"] == one["words"]


def test_heads_overview_limits(api: TestClient) -> None:
    msg = rejected(api, {"sentence": "word " * limits.MAX_OVERVIEW_TOKENS}, "sentence", "/api/heads")
    assert str(limits.MAX_OVERVIEW_TOKENS) in msg
    rejected(api, {"sentence": ""}, "sentence", "/api/heads")
    rejected(api, {"sentence": ANIMAL, "q": [[1]]}, "q", "/api/heads")
    ok = api.post("/api/heads", json={"sentence": "word " * (limits.MAX_OVERVIEW_TOKENS - 2)})
    assert ok.status_code == 200 and len(ok.content) < 2_000_000  # the largest overview stays modest


def test_model_info(api: TestClient, minilm: ModelHandle) -> None:
    j = api.get("/api/model").json()
    assert {k: j[k] for k in ("name", "kind", "layers", "heads", "head_size", "max_tokens", "mask")} == {
        "name": "all-MiniLM-L6-v2", "kind": "bert", "layers": 6, "heads": 12, "head_size": 32, "max_tokens": 512,
        "mask": "full",
    }  # fmt: skip
    assert j["loaded"] is True and j["load_seconds"] > 0  # the minilm fixture loaded it
    assert api.get("/api/model?load=true").json()["loaded"] is True


def test_gpt2_model_is_causal(gpt2_api: TestClient, tiny_gpt2_dir: Any) -> None:
    info = gpt2_api.get("/api/model").json()
    assert (info["kind"], info["name"], info["mask"], info["layers"], info["heads"]) == (
        "gpt2", tiny_gpt2_dir.name, "causal", 2, 2
    )  # fmt: skip
    j = post(gpt2_api, sentence=ANIMAL, layer=1, head=0)
    assert j["mask"] == "causal" and j["kind"] == "gpt2" and j["d_k"] == 8
    assert "".join(j["tokens"]) == ANIMAL and j["tokens"][0] == "The"  # byte-level pieces, decoded to text
    assert j["words"][0] == 0 and None not in j["words"]  # no special tokens
    assert np.all(np.triu(np.array(j["weights"]), 1) == 0)
    assert post(gpt2_api, sentence=ANIMAL, mask="causal")["mask"] == "causal"
    msg = rejected(gpt2_api, {"sentence": ANIMAL, "mask": "full"}, "mask")
    assert "causal" in msg
    rejected(gpt2_api, {"sentence": ANIMAL, "layer": 2}, "layer")
    rejected(gpt2_api, {"sentence": "word " * 129}, "sentence")  # its context is 128 tokens
    h = gpt2_api.post("/api/heads", json={"sentence": ANIMAL}).json()
    assert h["mask"] == "causal" and np.array(h["weights"]).shape[:2] == (2, 2)
    assert gpt2_api.post("/api/heads", json={"sentence": ANIMAL, "mask": "full"}).status_code == 422


def test_frame_request_with_a_sentence(api: TestClient) -> None:
    body = bytes(frame.encode({"sentence": ANIMAL, "layer": 3, "head": 1}, {}))
    r = api.post("/api/attention", content=body, headers={"content-type": frame.FRAME_MEDIA_TYPE})
    assert r.status_code == 200 and r.json()["layer"] == 3
    bad = bytes(frame.encode({"sentence": "\ud800 lone surrogate"}, {}))
    r = api.post("/api/attention", content=bad, headers={"content-type": frame.FRAME_MEDIA_TYPE})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][:2] == ["body", "sentence"]


def test_gpt2_means_keep_the_causal_mask(gpt2_api: TestClient) -> None:
    j = post(gpt2_api, sentence=ANIMAL, layer="mean", head="mean")
    w = np.array(j["weights"])
    assert j["mean_over"] == ["heads", "layers"] and np.all(np.triu(w, 1) == 0)
    np.testing.assert_allclose(w.sum(-1), 1, atol=1e-12)
    assert j["masked"][0][1] is None  # −∞ stays −∞ through the mean
