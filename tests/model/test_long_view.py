"""A long sentence's view (POST /api/attention, detail "summary"): the rows a view focuses on over every
key, equal to the full answer's rows; the whole table in blocks and each query's strongest keys, against
the full answer's weights; the limits and their 422s. MiniLM for the comparisons (any sentence may ask for
a summary), SmolLM2 past 512 tokens (the summary comes by itself) and at the long limit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app import frame, limits
from app.errors import InputError
from app.main import create_app
from app.model import registry, service
from app.model.loader import Model, handle_for
from tests.model.test_service import ANIMAL, rejected

DECODER = "smollm2-135m"
ROW_STAGES = ("scores", "scaled", "masked", "weights")


def _frame(client: TestClient, **body: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    r = client.post("/api/attention", json=body, headers={"accept": frame.FRAME_MEDIA_TYPE})
    assert r.status_code == 200, r.text
    return frame.decode(r.content)


def _blocks(weights: np.ndarray, edges: list[int]) -> tuple[np.ndarray, np.ndarray]:
    b = len(edges) - 1
    cells = [[weights[edges[a] : edges[a + 1], edges[c] : edges[c + 1]] for c in range(b)] for a in range(b)]
    return (
        np.array([[cell.sum(axis=1).mean() for cell in row] for row in cells]),
        np.array([[cell.max() for cell in row] for row in cells]),
    )


@pytest.mark.parametrize(("layer", "head", "mask"), [(3, 1, "full"), (5, 11, "causal")])
def test_a_summary_equals_the_full_answer(api: TestClient, layer: int, head: int, mask: str) -> None:
    """MiniLM on the animal sentence: the rows' stages are the full answer's rows to the last bit but
    float64 rounding, the blocks its weights' block means and maxima (float32: 1e-5), the top keys its
    strongest."""
    body = {"sentence": ANIMAL, "layer": layer, "head": head, "mask": mask}
    whole_fields, whole = _frame(api, **body)
    n = len(whole_fields["tokens"])
    rows = [0, 3, 4, 5, n - 1]
    fields, part = _frame(api, **body, detail="summary", rows=rows, block=4, top_k=3)
    assert whole_fields["detail"] == "full" and fields["detail"] == "summary"
    assert (fields["rows"], fields["block"], fields["edges"], fields["top_k"]) == (rows, 4, [0, 4, 8, 12, n], 3)
    assert fields["tokens"] == whole_fields["tokens"] and fields["mask"] == mask
    for name in ("q", "k", "v", "output"):
        np.testing.assert_allclose(part[name], whole[name][rows], rtol=0, atol=1e-14)
    for name in ROW_STAGES:
        np.testing.assert_allclose(part[name], whole[name][rows], rtol=1e-12, atol=1e-13)
        assert part[name].shape == (len(rows), n)
    mean, peak = _blocks(whole["weights"], fields["edges"])
    np.testing.assert_allclose(part["block_mean"], mean, rtol=0, atol=1e-5)
    np.testing.assert_allclose(part["block_peak"], peak, rtol=0, atol=1e-5)
    strongest = np.sort(whole["weights"], axis=1)[:, ::-1][:, :3]
    np.testing.assert_allclose(part["top_weights"], strongest, rtol=0, atol=1e-5)
    own = np.take_along_axis(whole["weights"], part["top_keys"].astype(int), 1)  # each top key's own weight
    np.testing.assert_allclose(own, strongest, rtol=0, atol=1e-5)


def test_only_the_arrays_asked_for(api: TestClient) -> None:
    """A view that moves its focus asks for new rows only (no blocks); one that opens the table asks for
    the blocks only; JSON carries the same, −∞ as null and the keys as whole numbers."""
    base = {"sentence": ANIMAL, "layer": 0, "head": 0, "detail": "summary"}
    _, rows_only = _frame(api, **base, rows=[7], stages=["weights", "masked"])
    assert set(rows_only) == {"weights", "masked"} and rows_only["weights"].shape[0] == 1
    _, blocks_only = _frame(api, **base, stages=["block_mean", "top_keys"])
    assert set(blocks_only) == {"block_mean", "top_keys"}
    j = api.post("/api/attention", json={**base, "mask": "causal", "rows": [2]}).json()
    assert j["masked"][0][3] is None and j["weights"][0][3] == 0 and j["rows"] == [2]
    assert j["top_keys"][0][:2] == [0, -1] and isinstance(j["top_keys"][5][0], int)
    assert sum(j["block_mean"][0]) == pytest.approx(1, abs=1e-6)
    everything = [*ROW_STAGES, "q", "output", "block_mean", "top_keys"]  # a page that does not know the length yet
    fields, full = _frame(api, sentence=ANIMAL, layer=0, head=0, stages=everything)
    assert fields["detail"] == "full" and set(full) == {*ROW_STAGES, "q", "output"}
    fields, default = _frame(api, sentence=ANIMAL, layer=0, head=0, detail="summary")
    assert fields["rows"] == list(range(len(fields["tokens"]))) and fields["block"] == 1  # ≤ 32 tokens: all rows
    assert default["block_mean"].shape == (len(fields["tokens"]),) * 2  # 16 tokens, 16 blocks: the weights


@pytest.mark.parametrize(
    ("extra", "field", "says"),
    [
        ({"block": 0}, "block", "block must be 1 … 16"),
        ({"block": 17}, "block", "block must be 1 … 16"),
        ({"rows": [16]}, "rows", "rows must be 0 … 15"),
        ({"rows": [-1]}, "rows", ""),
        ({"rows": list(range(limits.MAX_ROWS + 1))}, "rows", ""),
        ({"top_k": 0}, "top_k", ""),
        ({"top_k": limits.MAX_TOP_K + 1}, "top_k", ""),
        ({"detail": "full", "rows": [1]}, "rows", "rows goes with detail 'summary'"),
        ({"detail": "full", "block": 2}, "block", "block goes with detail 'summary'"),
        ({"detail": "summary", "head": "mean"}, "head", "a summary"),
        ({"detail": "summary", "head": None}, "head", "all heads"),
        ({"detail": "summary", "layer": "mean"}, "layer", "name the layer (0 … 5)"),
        ({"detail": "full", "stages": ["block_mean"]}, "stages", "block_mean goes with detail 'summary'"),
    ],
)
def test_bad_summaries_are_422_naming_the_field(api: TestClient, extra: dict[str, Any], field: str, says: str) -> None:
    body = {"sentence": ANIMAL, "layer": 0, "head": 0, **extra}
    assert says in rejected(api, body, field)


def test_summary_fields_need_a_sentence(api: TestClient) -> None:
    hand = {"q": [[1.0, 0.0]], "k": [[1.0, 0.0]], "v": [[1.0, 0.0]]}
    assert "goes with sentence" in rejected(api, {**hand, "rows": [0]}, "rows")
    assert "goes with sentence" in rejected(api, {**hand, "detail": "summary"}, "detail")
    assert "summary" in rejected(api, {**hand, "stages": ["top_keys"]}, "stages")
    r = api.post("/api/attention?format=csv&stage=weights", json={"sentence": ANIMAL, "detail": "summary", "head": 0})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "format"]


# ---- SmolLM2: past 512 tokens the summary comes by itself; the long limit ---------------------------


@pytest.fixture(scope="module")
def smol_client(smollm: Model) -> TestClient:  # smollm: the decoder is loaded (and converted) once
    return TestClient(create_app(backend="numpy"))


def long_text(smollm: Model, tokens: int) -> str:
    """Plain sentences (numbered, so no two are alike) of at least `tokens` tokens for SmolLM2: as many
    as their own token counts add up to, then one more while the whole is short (a space may join two)."""
    parts: list[str] = []
    count = 0
    while count < tokens or len(smollm.tokenizer.encode(" ".join(parts))) < tokens:
        part = f"Sentence {len(parts)} says that the cat ate its fish on day {len(parts) * 7 % 31}."
        parts.append(part)
        count += len(smollm.tokenizer.encode(" " + part))
    return " ".join(parts)


def test_a_decoder_past_512_tokens_answers_a_summary(smol_client: TestClient, smollm: Model) -> None:
    """600 tokens of SmolLM2, layer 2: the summary by itself, blocks of ⌈n / 16⌉, its default rows the
    first 32, causal; the server keeps layer 2's q, k, v and its input only (not layers 0 and 1); asking
    for every cell is a 422 naming the limit; the model's facts say how long a sentence may be."""
    text = long_text(smollm, 600)
    n = len(smollm.tokenizer.encode(text))
    fields, arrays = _frame(smol_client, sentence=text, model=DECODER, layer=2, head=4, rows=[n - 1, n - 2])
    assert fields["detail"] == "summary" and fields["mask"] == "causal" and len(fields["tokens"]) == n
    assert fields["block"] == -(-n // 16) and fields["rows"] == [n - 1, n - 2]
    assert arrays["weights"].shape == (2, n) and arrays["block_mean"].shape == (16, 16)
    np.testing.assert_allclose(arrays["weights"].sum(axis=1), 1, rtol=0, atol=1e-12)
    assert arrays["weights"][1, n - 1] == 0 and np.isneginf(arrays["masked"][1, n - 1])  # the later key is hidden
    # the rows' weights are a full softmax over every key of the model's own q and k (float64, a plain loop)
    trace = smollm.forward(smollm.tokenizer.encode(text).ids, "numpy", 3, open_last=True)  # every layer kept
    q, k = trace.q[2][4].astype(np.float64), trace.k[2][4 // 3].astype(np.float64)  # head 4 reads KV head 1
    for row, i in enumerate((n - 1, n - 2)):
        s = [float(q[i] @ k[j]) / 8 for j in range(i + 1)]  # keys 0 … i: the causal mask
        e = np.exp(np.array(s) - max(s))
        np.testing.assert_allclose(arrays["weights"][row, : i + 1], e / e.sum(), rtol=0, atol=1e-6)
    # what the server holds for it: layer 2's q, k, v (the same numbers) and its input, nothing of layers 0 and 1
    handle = handle_for(registry.decoder_file())
    for layer in (2, 1):  # a later layer continues the rows; an earlier one runs them again
        if layer == 1:
            _frame(smol_client, sentence=text, model=DECODER, layer=1, head=0, stages=["block_mean"])
        held = handle.cached(text, "numpy")
        assert held is not None and held.layers == layer + 1 and held.dropped == layer and not held.complete
        assert [held.holds(i) for i in range(layer + 1)] == [False] * layer + [True]
        assert [a.size for a in (*held.q[:layer], *held.k[:layer], *held.v[:layer], *held.hidden[:layer])] == [
            0
        ] * 4 * layer
        for name in ("q", "k", "v"):
            np.testing.assert_array_equal(getattr(held, name)[layer], getattr(trace, name)[layer])
        np.testing.assert_array_equal(held.hidden[layer], trace.hidden[layer])  # its input, for the rows to flow on
        assert held.nbytes == sum(getattr(trace, name)[layer].nbytes for name in ("q", "k", "v", "hidden"))
    msg = rejected(smol_client, {"sentence": text, "model": DECODER, "detail": "full"}, "detail")
    assert f"sentence is {n} tokens" in msg and "up to 512 tokens" in msg
    with pytest.raises(InputError) as refused:  # every cell for the quiz, the tiles, the notebook: the same one limit
        service.sentence_attention(handle, text, 2, 4, None, False, "numpy")
    assert (refused.value.field, refused.value.message) == ("detail", msg)
    info = smol_client.get("/api/models").json()["models"][1]
    assert info["id"] == DECODER


def test_over_the_long_limit_is_422_naming_it(smol_client: TestClient, smollm: Model) -> None:
    text = long_text(smollm, limits.MAX_LONG_TOKENS + 1)
    msg = rejected(smol_client, {"sentence": text, "model": DECODER}, "sentence")
    assert "the limit is 4096 tokens" in msg and f"{len(smollm.tokenizer.encode(text))} tokens" in msg
    r = smol_client.post("/api/generate", json={"prompt": text, "chat": False, "max_new_tokens": 1})  # a prompt
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "prompt"
    assert f"prompt is {len(smollm.tokenizer.encode(text))} tokens" in r.json()["detail"][0]["msg"]
    assert "the limit is 4096 tokens" in r.json()["detail"][0]["msg"]
