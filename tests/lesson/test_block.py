"""The transformer block, vector by vector, against transformers' own forward (hidden states and hooks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.lesson.block import BERT_ORDER, GPT2_ORDER, block, embed, layer_input, pre_ln_what_if
from app.main import create_app
from app.model.loader import ModelHandle, handle_for
from tests.model.fixtures import SENTENCES

TOL = 1e-4
REL = 1e-6  # relative: about 8 float32 steps, for the large values of a BERT feed-forward


def _hooked(hf: Any, ids: list[int], modules: dict[str, Any]) -> tuple[Any, dict[str, np.ndarray]]:
    """transformers' forward with the inputs/outputs of `modules` captured: name → (n, C) float64."""
    torch = pytest.importorskip("torch")
    seen: dict[str, np.ndarray] = {}
    handles = []

    def keep(name: str, take_input: bool) -> Any:
        def hook(_: Any, args: Any, out: Any) -> None:
            t = args[0] if take_input else (out[0] if isinstance(out, tuple) else out)
            seen[name] = t[0].detach().double().numpy()

        return hook

    for name, (module, take_input) in modules.items():
        handles.append(module.register_forward_hook(keep(name, take_input)))
    try:
        with torch.no_grad():
            out = hf(torch.tensor([ids]), output_hidden_states=True)
    finally:
        for h in handles:
            h.remove()
    return out, seen


@pytest.mark.parametrize("sentence", SENTENCES[:3])
def test_bert_every_layer_and_point_matches_transformers(minilm: ModelHandle, hf_minilm: Any, sentence: str) -> None:
    model = minilm.model()
    ids = minilm.encode(sentence).ids
    x = embed(ids, model.weights, model.spec)
    for layer in range(model.spec.layers):
        hl = hf_minilm.encoder.layer[layer]
        out, seen = _hooked(
            hf_minilm,
            ids,
            {
                "attention": (hl.attention.output.dense, False),  # W_O's output, before the residual
                "norm1": (hl.attention.output, False),  # LN(x + attention)
                "ffn": (hl.output.dense, False),  # W₂·GELU(W₁·norm1), before the residual
                "output": (hl, False),
            },
        )
        b = block(x, model.weights, model.spec, layer)
        assert b.order == BERT_ORDER
        np.testing.assert_allclose(b.vectors["input"], out.hidden_states[layer][0].double().numpy(), atol=TOL)
        np.testing.assert_allclose(b.vectors["output"], out.hidden_states[layer + 1][0].double().numpy(), atol=TOL)
        for name in ("attention", "norm1", "ffn", "output"):
            # float32 on both sides: the feed-forward's change reaches ~190, where 1e-4 is a few float32 steps
            np.testing.assert_allclose(b.vectors[name], seen[name], atol=TOL, rtol=REL, err_msg=f"layer {layer} {name}")
        np.testing.assert_allclose(b.vectors["residual"], b.vectors["input"] + seen["attention"], atol=TOL)
        np.testing.assert_allclose(b.vectors["residual2"], seen["norm1"] + seen["ffn"], atol=TOL, rtol=REL)
        x = b.vectors["output"]


def test_gpt2_order_and_vectors_match_transformers(tiny_gpt2_dir: Path, hf_gpt2: Any) -> None:
    h = handle_for(tiny_gpt2_dir)
    model = h.model()
    ids = h.encode("The animal didn't cross the street because it was too tired.").ids
    x = embed(ids, model.weights, model.spec)
    for layer in range(model.spec.layers):
        hl = hf_gpt2.h[layer]
        out, seen = _hooked(
            hf_gpt2,
            ids,
            {"ln_1": (hl.ln_1, False), "attention": (hl.attn, False), "ln_2": (hl.ln_2, False), "mlp": (hl.mlp, False)},
        )
        b = block(x, model.weights, model.spec, layer)
        assert b.order == GPT2_ORDER
        np.testing.assert_allclose(b.vectors["input"], out.hidden_states[layer][0].double().numpy(), atol=TOL)
        for name in ("ln_1", "attention", "ln_2", "mlp"):
            np.testing.assert_allclose(b.vectors[name], seen[name], atol=TOL, err_msg=f"layer {layer} {name}")
        np.testing.assert_allclose(b.vectors["residual"], b.vectors["input"] + seen["attention"], atol=TOL)
        if layer + 1 < model.spec.layers:
            np.testing.assert_allclose(b.vectors["output"], out.hidden_states[layer + 1][0].double().numpy(), atol=TOL)
        else:  # transformers reports the last hidden state after the final LayerNorm
            final = hf_gpt2.ln_f(__import__("torch").tensor(b.vectors["output"][None])).detach().double().numpy()[0]
            np.testing.assert_allclose(final, out.hidden_states[-1][0].double().numpy(), atol=TOL)
        x = b.vectors["output"]


def test_pre_ln_what_if_is_the_same_weights_in_the_other_order(minilm: ModelHandle) -> None:
    """Independent re-computation of the what-if in float64 from the raw weights."""
    model = minilm.model()
    w, spec = model.weights, model.spec
    ids = minilm.encode(SENTENCES[0]).ids
    x = layer_input(ids, w, spec, 2).astype(np.float64)
    p = "encoder.layer.2."

    def ln(a: np.ndarray, name: str) -> np.ndarray:
        m, s = a.mean(-1, keepdims=True), a.std(-1, keepdims=True)
        out: np.ndarray = (a - m) / np.sqrt(s**2 + spec.eps) * w[name + ".weight"] + w[name + ".bias"]
        return out

    def lin(a: np.ndarray, name: str) -> np.ndarray:
        return a @ w[name + ".weight"].astype(np.float64).T + w[name + ".bias"]

    a = ln(x, p + "attention.output.LayerNorm")
    q, k, v = (lin(a, p + f"attention.self.{n}") for n in ("query", "key", "value"))
    z = np.zeros_like(v)
    for head in range(spec.heads):
        cols = slice(head * 32, head * 32 + 32)
        s = q[:, cols] @ k[:, cols].T / np.sqrt(32)
        e = np.exp(s - s.max(1, keepdims=True))
        z[:, cols] = (e / e.sum(1, keepdims=True)) @ v[:, cols]
    r = x + lin(z, p + "attention.output.dense")
    hdn = lin(ln(r, p + "output.LayerNorm"), p + "intermediate.dense")
    from math import erf

    gelu = hdn * 0.5 * (1 + np.vectorize(erf)(hdn / np.sqrt(2)))
    expected = r + lin(gelu, p + "output.dense")
    got = pre_ln_what_if(x, w, spec, 2)
    np.testing.assert_allclose(got.vectors["output"], expected, atol=TOL)
    post = block(x, w, spec, 2)
    assert np.abs(got.vectors["output"] - post.vectors["output"]).max() > 0.1  # the order matters


def test_api_block_bert(api: TestClient, minilm: ModelHandle) -> None:
    r = api.post("/api/block", json={"sentence": SENTENCES[0], "layer": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["order"] == list(BERT_ORDER) and body["layer"] == 3 and body["kind"] == "bert"
    model = minilm.model()
    ids = minilm.encode(SENTENCES[0]).ids
    assert body["tokens"] == minilm.encode(SENTENCES[0]).tokens
    x = layer_input(ids, model.weights, model.spec, 3)
    b = block(x, model.weights, model.spec, 3)
    for name in BERT_ORDER:
        np.testing.assert_allclose(np.array(body["vectors"][name]), b.vectors[name], atol=1e-6)
        np.testing.assert_allclose(body["norms"][name], np.linalg.norm(b.vectors[name], axis=1), atol=1e-4)
    what_if = body["what_if"]
    assert what_if["order"][0] == "input" and what_if["order"][-1] == "output"
    pre = pre_ln_what_if(x, model.weights, model.spec, 3).vectors["output"].astype(np.float64)
    post = b.vectors["output"].astype(np.float64)
    np.testing.assert_allclose(what_if["output_distance"], np.linalg.norm(pre - post, axis=1), atol=1e-4)
    cos = (pre * post).sum(1) / np.linalg.norm(pre, axis=1) / np.linalg.norm(post, axis=1)
    np.testing.assert_allclose(what_if["output_cosine"], cos, atol=1e-6)
    nxt = api.post("/api/block", json={"sentence": SENTENCES[0], "layer": 4}).json()
    np.testing.assert_allclose(nxt["vectors"]["input"], body["vectors"]["output"], atol=1e-6)


def test_api_block_gpt2(gpt2_api: TestClient) -> None:
    r = gpt2_api.post("/api/block", json={"sentence": "The quick brown fox", "layer": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["order"] == list(GPT2_ORDER) and body["kind"] == "gpt2" and body["what_if"] is None


@pytest.mark.parametrize(
    ("body", "field", "fragment"),
    [
        ({"sentence": "hi", "layer": 6}, "layer", "0 … 5"),
        ({"sentence": "hi", "layer": -1}, "layer", ""),
        ({"sentence": "   ", "layer": 0}, "sentence", "empty"),
        ({"sentence": "word " * 200, "layer": 0}, "sentence", "64"),
        ({"sentence": "hi", "layer": 0, "head": 1}, "head", ""),
        ({"layer": 0}, "sentence", ""),
    ],
)
def test_api_block_rejects(api: TestClient, body: dict[str, Any], field: str, fragment: str) -> None:
    r = api.post("/api/block", json=body)
    assert r.status_code == 422, r.text
    d = r.json()["detail"][0]
    assert d["loc"][-1] == field and fragment in d["msg"]


def test_api_block_model_missing_is_503(tmp_path: Path) -> None:
    client = TestClient(create_app(backend="numpy", model=str(tmp_path / "nothing")))
    r = client.post("/api/block", json={"sentence": "hi", "layer": 0})
    assert r.status_code == 503 and r.json()["detail"][0]["type"] == "model_unavailable"


@pytest.mark.full  # the per-sentence tests above compare the same numbers; this one sums them up
def test_worst_difference_from_transformers(minilm: ModelHandle, hf_minilm: Any) -> None:
    """The figure the README quotes: over the model tests' sentences and every layer, the largest
    difference of heads × W_O and of a layer's output from transformers (run with -s to print it)."""
    model = minilm.model()
    worst_o = worst_h = 0.0
    for sentence in SENTENCES:
        ids = minilm.encode(sentence).ids
        x = embed(ids, model.weights, model.spec)
        for layer in range(model.spec.layers):
            out, seen = _hooked(
                hf_minilm, ids, {"attention": (hf_minilm.encoder.layer[layer].attention.output.dense, False)}
            )
            b = block(x, model.weights, model.spec, layer)
            worst_o = max(worst_o, float(np.abs(b.heads.output - seen["attention"]).max()))
            worst_h = max(worst_h, float(np.abs(b.vectors["output"] - out.hidden_states[layer + 1][0].numpy()).max()))
            x = b.vectors["output"]
    print(f"\nheads × W_O vs transformers' attention.output.dense: max |diff| = {worst_o:.1e}")
    print(f"block output vs transformers' hidden_states, every layer: max |diff| = {worst_h:.1e}")
    assert worst_o < TOL and worst_h < TOL
