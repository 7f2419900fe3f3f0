"""Multi-head attention against a plain float64 loop, and the real model's W_O against transformers."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.lesson.block import layer_attention, layer_input
from app.lesson.multihead import example, multihead
from app.model.loader import ModelHandle, handle_for
from tests.model.fixtures import SENTENCES


def loop_multihead(
    x: list[list[float]], w_q: Any, w_k: Any, w_v: Any, w_o: Any, causal: bool
) -> tuple[list[list[list[float]]], list[list[float]], list[list[float]]]:
    """Concat(head_1 … head_h)·W_O with Python loops and floats only: (weights per head, concat, output)."""
    n, d_model, h = len(x), len(x[0]), len(w_q)

    def matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
        return [[sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]

    all_weights, concat = [], [[] for _ in range(n)]  # type: ignore[var-annotated]
    for head in range(h):
        q, k, v = matmul(x, w_q[head]), matmul(x, w_k[head]), matmul(x, w_v[head])
        d_k = len(q[0])
        rows = []
        for i in range(n):
            seen = [j for j in range(n) if not causal or j <= i]
            s = {j: sum(q[i][t] * k[j][t] for t in range(d_k)) / math.sqrt(d_k) for j in seen}
            top = max(s.values())
            e = {j: math.exp(s[j] - top) for j in seen}
            total = sum(e.values())
            rows.append([e[j] / total if j in e else 0.0 for j in range(n)])
        all_weights.append(rows)
        z = matmul(rows, v)
        for i in range(n):
            concat[i] += z[i]
    assert d_model == len(w_o[0])
    return all_weights, concat, matmul(concat, w_o)


@pytest.mark.parametrize("heads", [1, 2, 3, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_multihead_matches_a_plain_loop(heads: int, causal: bool) -> None:
    ex = example(heads, seed=heads + 10)
    mh = multihead(ex["x"], ex["w_q"], ex["w_k"], ex["w_v"], ex["w_o"], "causal" if causal else "full")
    weights, concat, output = loop_multihead(ex["x"], ex["w_q"], ex["w_k"], ex["w_v"], ex["w_o"], causal)
    np.testing.assert_allclose(mh.heads["weights"], weights, atol=1e-12)
    np.testing.assert_allclose(mh.concat, concat, atol=1e-12)
    np.testing.assert_allclose(mh.output, output, atol=1e-12)


def test_multihead_unequal_sizes_random() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 6))
    w_q, w_k, w_v = rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 6, 4)), rng.normal(size=(3, 6, 2))
    w_o = rng.normal(size=(6, 6))
    mh = multihead(x, w_q, w_k, w_v, w_o)
    weights, concat, output = loop_multihead(x.tolist(), w_q.tolist(), w_k.tolist(), w_v.tolist(), w_o.tolist(), False)
    assert mh.concat.shape == (5, 6) and mh.heads["q"].shape == (3, 5, 4) and mh.heads["output"].shape == (3, 5, 2)
    np.testing.assert_allclose(mh.output, output, atol=1e-10)
    np.testing.assert_allclose(mh.concat, concat, atol=1e-10)
    np.testing.assert_allclose(mh.heads["weights"], weights, atol=1e-12)


def test_example_is_seeded_and_small() -> None:
    a, b = example(3, seed=5), example(3, seed=5)
    assert a == b and np.array(a["w_q"]).shape == (3, 4, 2) and np.array(a["w_o"]).shape == (6, 4)
    assert example(3, seed=6)["x"] != a["x"]


@pytest.mark.parametrize("seed", [7, 8, 123])
def test_adding_heads_keeps_each_heads_own_weights(seed: int) -> None:
    """Going from 1 to 4 heads adds matrices: head i's W_Q, W_K and W_V (and x) stay exactly as they were."""
    examples = {h: example(h, seed=seed) for h in (1, 2, 3, 4)}
    for h in (1, 2, 3):
        for more in range(h + 1, 5):
            assert examples[more]["x"] == examples[h]["x"]
            for name in ("w_q", "w_k", "w_v"):
                assert examples[more][name][:h] == examples[h][name], (name, h, more)
    # and the heads differ from one another (each asks its own question)
    w_q = np.array(examples[4]["w_q"])
    assert all(not np.array_equal(w_q[i], w_q[j]) for i in range(4) for j in range(i + 1, 4))
    assert np.array(examples[3]["w_o"]).shape == (6, 4)


def test_two_head_example_unchanged() -> None:
    """The two-head worked example the chapter opens on: head 1 of seed 7 gives "cat" 0.520 … to "ate"."""
    mh = multihead(**{k: v for k, v in example(2, seed=7).items() if k in ("x", "w_q", "w_k", "w_v", "w_o")})
    row = mh.heads["weights"][0][1]
    assert int(np.argmax(row)) == 2 and f"{row[2]:.3f}" == "0.520"
    mh4 = multihead(**{k: v for k, v in example(4, seed=7).items() if k in ("x", "w_q", "w_k", "w_v", "w_o")})
    np.testing.assert_array_equal(mh4.heads["weights"][0], mh.heads["weights"][0])


def test_api_multihead_every_field(api: TestClient) -> None:
    ex = api.get("/api/multihead/example", params={"heads": 3}).json()
    body = {k: ex[k] for k in ("tokens", "x", "w_q", "w_k", "w_v", "w_o")} | {"mask": "causal"}
    r = api.post("/api/multihead", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["tokens"] == ex["tokens"] and out["mask"] == "causal"
    weights, concat, output = loop_multihead(ex["x"], ex["w_q"], ex["w_k"], ex["w_v"], ex["w_o"], True)
    np.testing.assert_allclose(out["heads"]["weights"], weights, atol=1e-12)
    np.testing.assert_allclose(out["concat"], concat, atol=1e-12)
    np.testing.assert_allclose(out["output"], output, atol=1e-12)
    assert set(out["heads"]) == {"q", "k", "v", "scores", "scaled", "masked", "weights", "output"}
    assert out["heads"]["masked"][0][0][1] is None  # −∞ is written as null, as in /api/attention
    # each head is exactly what /api/attention says for that head's q, k, v
    one = api.post("/api/attention", json={"q": out["heads"]["q"][1], "k": out["heads"]["k"][1],
                                           "v": out["heads"]["v"][1], "mask": "causal"}).json()  # fmt: skip
    assert one["weights"] == out["heads"]["weights"][1] and one["output"] == out["heads"]["output"][1]


def _good() -> dict[str, Any]:
    ex = example(2)
    return {k: ex[k] for k in ("tokens", "x", "w_q", "w_k", "w_v", "w_o")}


@pytest.mark.parametrize(
    ("patch", "field", "fragment"),
    [
        ({"x": [[1, 2, 3, 4]] * 513, "tokens": None}, "x", "512"),
        ({"x": [[1.0] * 1025] * 4}, "x", "1024"),
        ({"w_q": [[[1.0, 0.0]] * 4] * 17}, "w_q", "16"),
        ({"w_q": [[[1.0, 0.0]] * 3] * 2}, "w_q", "d_model = 4"),
        ({"w_k": [[[1.0]] * 4] * 2}, "w_k", "shape of w_q"),
        ({"w_v": [[[1.0, 0.0]] * 4] * 3}, "w_v", "3 heads"),
        ({"w_o": [[1.0] * 4] * 3}, "w_o", "4 × 4"),
        ({"x": [[1, 2], [3, 4]]}, "w_q", "d_model = 2"),
        ({"tokens": ["a"]}, "tokens", "4 rows"),
        ({"x": [[1, "a", 3, 4]] * 4}, "x", ""),
        ({"w_o": [[1e200] * 4] * 4, "x": [[1e200] * 4] * 4}, "x", "overflow"),
        ({"mask": "diagonal"}, "mask", ""),
        ({"extra": 1}, "extra", ""),
    ],
)
def test_api_multihead_rejects(api: TestClient, patch: dict[str, Any], field: str, fragment: str) -> None:
    body = _good() | patch
    r = api.post("/api/multihead", json={k: v for k, v in body.items() if v is not None})
    assert r.status_code == 422, r.text
    d = r.json()["detail"][0]
    assert d["loc"][:2] == ["body", field] and fragment in d["msg"], d


def test_api_multihead_example_limits(api: TestClient) -> None:
    assert api.get("/api/multihead/example", params={"heads": 5}).status_code == 422
    assert api.get("/api/multihead/example", params={"heads": 0}).status_code == 422


def _hf_attention(hf: Any, ids: list[int], layer_module: Any, proj: Any) -> tuple[np.ndarray, np.ndarray]:
    """transformers' concatenated heads (the input of W_O) and W_O's output, by forward hooks."""
    torch = pytest.importorskip("torch")
    seen: dict[str, np.ndarray] = {}

    def hook(_: Any, args: Any, out: Any) -> None:
        seen["concat"], seen["output"] = args[0][0].double().numpy(), out[0].double().numpy()

    h = proj.register_forward_hook(hook)
    try:
        with torch.no_grad():
            hf(torch.tensor([ids]))
    finally:
        h.remove()
    return seen["concat"], seen["output"]


@pytest.mark.parametrize("sentence", SENTENCES[:2])
def test_real_model_heads_times_w_o_match_transformers(minilm: ModelHandle, hf_minilm: Any, sentence: str) -> None:
    model = minilm.model()
    ids = minilm.encode(sentence).ids
    for layer in range(model.spec.layers):
        x = layer_input(ids, model.weights, model.spec, layer)
        mh = layer_attention(x, model.weights, model.spec, layer, "numpy")
        hl = hf_minilm.encoder.layer[layer].attention
        concat, output = _hf_attention(hf_minilm, ids, hl, hl.output.dense)
        assert mh.heads["weights"].shape[0] == 12
        np.testing.assert_allclose(mh.concat, concat, atol=1e-4)
        np.testing.assert_allclose(mh.output, output, atol=1e-4)


def test_real_gpt2_heads_times_c_proj_match_transformers(
    tiny_gpt2_dir: Path, hf_gpt2: Any, gpt2_api: TestClient
) -> None:
    h = handle_for(tiny_gpt2_dir)
    ids = h.encode("The quick brown fox jumps").ids
    concat, output = _hf_attention(hf_gpt2, ids, hf_gpt2.h[1], hf_gpt2.h[1].attn.c_proj)
    r = gpt2_api.post("/api/multihead/model", json={"sentence": "The quick brown fox jumps", "layer": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mask"] == "causal" and body["heads"] == 2
    np.testing.assert_allclose(body["concat"], concat, atol=1e-4)
    np.testing.assert_allclose(body["output"], output, atol=1e-4)


def test_api_multihead_model(api: TestClient, minilm: ModelHandle, hf_minilm: Any) -> None:
    r = api.post("/api/multihead/model", json={"sentence": SENTENCES[0], "layer": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    ids = minilm.encode(SENTENCES[0]).ids
    assert body["ids"] == ids and body["heads"] == 12 and body["head_size"] == 32
    assert body["w_o_name"] == "encoder.layer.3.attention.output.dense"
    hl = hf_minilm.encoder.layer[3].attention
    concat, output = _hf_attention(hf_minilm, ids, hl, hl.output.dense)
    np.testing.assert_allclose(body["concat"], concat, atol=1e-4)
    np.testing.assert_allclose(body["output"], output, atol=1e-4)
    z = np.array(body["z"])  # (h, n, d): the concat is head 0's z, then head 1's, …
    np.testing.assert_array_equal(np.concatenate(list(z), axis=1), np.array(body["concat"]))
    np.testing.assert_allclose(np.array(body["weights"]).sum(-1), 1.0, atol=1e-12)
    it = minilm.encode(SENTENCES[0]).tokens.index("it")
    assert body["weights"][1][it][minilm.encode(SENTENCES[0]).tokens.index("animal")] == pytest.approx(0.677, abs=1e-3)


@pytest.mark.parametrize(
    ("body", "field"),
    [({"sentence": "hi", "layer": 9}, "layer"), ({"sentence": "", "layer": 0}, "sentence"), ({"layer": 1}, "sentence")],
)
def test_api_multihead_model_rejects(api: TestClient, body: dict[str, Any], field: str) -> None:
    r = api.post("/api/multihead/model", json=body)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == field
