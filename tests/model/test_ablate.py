"""Switching heads off and the logit lens (app.model.ablate, POST /api/ablate, /api/lens, "ablate" in
/api/generate) against transformers with the same intervention.

transformers 5 has no head_mask any more: its effect (each switched-off head's weights × 0, so its
slice of the merged heads is 0) is a forward pre-hook on the output projection that zeroes the head's
input columns — attention.output.dense for BERT (32 columns a head), o_proj for Llama (64).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.attention import attention
from app.model import ablate, generate
from app.model.loader import Model, ModelHandle
from app.model.select import layer_heads

SENTENCE = "The animal didn't cross the street because it was too tired."
PROMPT = "The capital of France is"
TOL = 1e-5  # the budget for probabilities and weights
MINILM_SETS = [[(0, 3)], [(2, 5), (4, 0)], [(3, h) for h in range(12)]]
SMOLLM_SETS = [[(23, 4)], [(0, 6), (12, 3)], [(20, h) for h in range(9)]]


@contextmanager
def heads_off(modules: list[Any], heads: list[tuple[int, int]], d: int) -> Iterator[None]:
    """Forward pre-hooks on each layer's output projection zeroing the d input columns of the heads."""
    handles = []
    for layer, module in enumerate(modules):
        off = [h for (at, h) in heads if at == layer]
        if not off:
            continue

        def zero(_: Any, args: tuple[Any, ...], off: list[int] = off) -> tuple[Any, ...]:
            x = args[0].clone()
            for h in off:
                x[..., h * d : (h + 1) * d] = 0
            return (x, *args[1:])

        handles.append(module.register_forward_pre_hook(zero))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _run(hf: Any, ids: list[int]) -> Any:
    import torch

    with torch.no_grad():
        return hf(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)


# ---- all-MiniLM-L6-v2 -------------------------------------------------------------------------


@pytest.mark.parametrize("heads", MINILM_SETS, ids=["one", "two-layers", "all-of-layer-3"])
def test_minilm_heads_off_as_transformers(minilm: ModelHandle, hf_minilm: Any, heads: list[tuple[int, int]]) -> None:
    model = minilm.model()
    ids = minilm.encode(SENTENCE).ids
    before = model.forward(ids)
    after = ablate.rerun(model, ids, before, heads)
    dense = [layer.attention.output.dense for layer in hf_minilm.encoder.layer]
    with heads_off(dense, heads, 32):
        theirs = _run(hf_minilm, ids)
    first = min(at for at, _ in heads)
    for layer in range(6):
        ours = attention(*layer_heads(after, layer), "full").weights  # (12, n, n)
        np.testing.assert_allclose(
            ours, theirs.attentions[layer][0].numpy(), atol=TOL, rtol=0, err_msg=f"layer {layer}"
        )
    np.testing.assert_allclose(after.hidden[-1], theirs.hidden_states[-1][0].numpy(), atol=1e-4, rtol=0)
    # the layers below the first switched-off head are not run again: the same arrays
    assert all(after.hidden[i] is before.hidden[i] for i in range(first + 1))
    assert after.hidden[first + 1] is not before.hidden[first + 1]
    changed = np.abs(after.hidden[-1] - before.hidden[-1]).max()
    assert changed > 1e-3  # switching a head off changes the output


def test_no_heads_off_is_the_trace_itself(minilm: ModelHandle) -> None:
    model = minilm.model()
    ids = minilm.encode(SENTENCE).ids
    before = model.forward(ids)
    assert ablate.rerun(model, ids, before, []) is before


# ---- SmolLM2-135M -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hf_prompt(smollm: Model, hf_smollm: Any) -> dict[str, Any]:
    ids = smollm.tokenizer.encode(PROMPT).ids
    return {"ids": ids, "out": _run(hf_smollm, ids)}


def _o_projs(hf: Any) -> list[Any]:
    return [layer.self_attn.o_proj for layer in hf.model.layers]


@pytest.mark.parametrize("heads", SMOLLM_SETS, ids=["one", "two-layers", "all-of-layer-20"])
def test_smollm_candidates_and_weights_as_transformers(
    api: TestClient, smollm: Model, hf_smollm: Any, hf_prompt: dict[str, Any], heads: list[tuple[int, int]]
) -> None:
    import torch

    body = {"model": "smollm2-135m", "prompt": PROMPT, "heads": [list(h) for h in heads], "layer": 29, "head": 3}
    r = api.post("/api/ablate", json=body)
    assert r.status_code == 200, r.text
    a = r.json()
    ids = hf_prompt["ids"]
    with heads_off(_o_projs(hf_smollm), heads, 64):
        theirs = _run(hf_smollm, ids)
    for name, out in (("before", hf_prompt["out"]), ("after", theirs)):
        p = torch.softmax(out.logits[0, -1].double(), -1).numpy()
        got = a["candidates"][name]
        assert len(got) == 10
        np.testing.assert_allclose([c["p"] for c in got], p[[c["id"] for c in got]], atol=TOL, rtol=0, err_msg=name)
        assert got[0]["id"] == int(np.argmax(p))
        np.testing.assert_allclose(a["weights"][name], out.attentions[29][0, 3].numpy(), atol=TOL, rtol=0)
    assert a["candidates"]["before"][0]["token"] == " Paris"
    assert a["heads"] == sorted([list(h) for h in heads]) and a["first_layer"] == min(at for at, _ in heads)
    # the final vectors: cosine of each token's before and after, as transformers' last hidden states give it
    x, y = (o.hidden_states[-1][0].double().numpy() for o in (hf_prompt["out"], theirs))
    cos = (x * y).sum(-1) / np.linalg.norm(x, axis=-1) / np.linalg.norm(y, axis=-1)
    np.testing.assert_allclose(a["cosine"], cos, atol=1e-6, rtol=0)
    first = min(at for at, _ in heads)
    if first > 0:  # below the first switched-off head nothing changes, so a late head leaves early layers' weights
        np.testing.assert_allclose(
            attention(*layer_heads(smollm.forward(ids), first), "causal").weights,
            theirs.attentions[first][0].numpy(),
            atol=TOL,
        )


def test_the_head_that_matters_for_paris(api: TestClient) -> None:
    """Layer 23's head 4, switched off alone, takes most of "Paris" away (0.77 → ~0.14); layer 27's head 1 almost
    nothing: the chapter's question rests on these."""
    p = {}
    for head in ([23, 4], [27, 1]):
        a = api.post("/api/ablate", json={"model": "smollm2-135m", "prompt": PROMPT, "heads": [head]}).json()
        before = a["candidates"]["before"][0]
        after = {c["id"]: c["p"] for c in a["candidates"]["after"]}
        p[tuple(head)] = (before["p"], after.get(before["id"], 0.0))
    assert p[(23, 4)][0] - p[(23, 4)][1] > 0.4
    assert abs(p[(27, 1)][0] - p[(27, 1)][1]) < 0.05


def test_the_lens_as_transformers(api: TestClient, smollm: Model, hf_smollm: Any, hf_prompt: dict[str, Any]) -> None:
    """hidden_states → model.model.norm → lm_head, except the last, which transformers reports normed already."""
    import torch

    r = api.post("/api/lens", json={"prompt": PROMPT})
    assert r.status_code == 200, r.text
    a = r.json()
    hidden = hf_prompt["out"].hidden_states  # 31: the embedding, then each layer (the last one normed)
    assert len(a["layers"]) == len(hidden) == 31
    with torch.no_grad():
        for i, h in enumerate(hidden):
            x = h[0, -1]
            if i < len(hidden) - 1:
                x = hf_smollm.model.norm(x)
            p = torch.softmax(hf_smollm.lm_head(x).double(), -1).numpy()
            got = a["layers"][i]
            assert got["layer"] == i - 1
            ids = [c["id"] for c in got["top"]]
            assert ids == list(np.argsort(-p, kind="stable")[:5]), f"layer {i - 1}"
            np.testing.assert_allclose(
                [c["p"] for c in got["top"]], p[ids], atol=1e-4, rtol=0, err_msg=f"layer {i - 1}"
            )
    assert a["answer"]["token"] == " Paris" and a["layers"][-1]["top"][0]["id"] == a["answer"]["id"]
    assert a["first_top"] == next(g["layer"] for g in a["layers"] if g["top"][0]["id"] == a["answer"]["id"])
    assert a["position"] == len(a["tokens"]) - 1


def test_the_lens_at_an_earlier_position(api: TestClient, smollm: Model, hf_smollm: Any) -> None:
    """Position 2 of the prompt reads as the prompt cut after its third token (a causal model)."""
    a = api.post("/api/lens", json={"prompt": PROMPT, "position": 2}).json()
    cut = api.post("/api/lens", json={"prompt": "".join(a["tokens"][:3])}).json()
    assert cut["tokens"] == a["tokens"][:3]
    for x, y in zip(a["layers"], cut["layers"], strict=True):
        assert [c["id"] for c in x["top"]] == [c["id"] for c in y["top"]]
        np.testing.assert_allclose([c["p"] for c in x["top"]], [c["p"] for c in y["top"]], atol=1e-5)


def test_writing_with_heads_off_is_transformers_generate(api: TestClient, smollm: Model, hf_smollm: Any) -> None:
    import torch

    heads = [(23, 4), (0, 6)]
    body = {"prompt": PROMPT, "max_new_tokens": 6, "ablate": [list(h) for h in heads]}
    ours = api.post("/api/generate", json=body, headers={"accept": "application/json"}).json()
    plain = api.post("/api/generate", json={**body, "ablate": []}, headers={"accept": "application/json"}).json()
    ids = smollm.tokenizer.encode(PROMPT).ids
    with heads_off(_o_projs(hf_smollm), heads, 64), torch.no_grad():
        theirs = hf_smollm.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            max_new_tokens=6, do_sample=False, pad_token_id=2,
        )[0, len(ids) :].tolist()  # fmt: skip
    assert [t["id"] for t in ours["tokens"]] == theirs
    assert plain["tokens"][0]["token"] == " Paris"
    assert ours["tokens"][0]["candidates"][0]["p"] < plain["tokens"][0]["candidates"][0]["p"] - 0.3
    # the written token's candidates are the ablated model's: the first one's as POST /api/ablate gives them
    a = api.post("/api/ablate", json={"model": "smollm2-135m", "prompt": PROMPT, "heads": body["ablate"]}).json()
    np.testing.assert_allclose(
        [c["p"] for c in ours["tokens"][0]["candidates"]], [c["p"] for c in a["candidates"]["after"]], atol=1e-5
    )


def test_writing_without_the_hook_is_unchanged(smollm: Model) -> None:
    """No heads switched off: the steps are the same numbers as before the hook existed (a hook of no heads)."""
    ids = smollm.tokenizer.encode(PROMPT).ids
    plain = list(generate.write(smollm, ids, 3, generate.Sampling(), None, 0, 0))
    hooked = list(generate.write(smollm, ids, 3, generate.Sampling(), None, 0, 0, hooks=ablate.switch_off([])))
    for x, y in zip(plain[:-1], hooked[:-1], strict=True):
        assert isinstance(x, generate.Written) and isinstance(y, generate.Written)
        np.testing.assert_array_equal(x.logits, y.logits)


# ---- the refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field", "words"),
    [
        ("/api/ablate", {"sentence": "a b", "heads": [[6, 0]]}, "heads", ["heads[0]", "0 … 5", "6 layers"]),
        ("/api/ablate", {"sentence": "a b", "heads": [[0, 0], [1, 12]]}, "heads", ["heads[1]", "0 … 11"]),
        ("/api/ablate", {"sentence": "a b", "heads": [[1]]}, "heads", ["at least 2"]),
        ("/api/ablate", {"sentence": "a b", "heads": [[1, 2, 3]]}, "heads", ["at most 2"]),
        ("/api/ablate", {"sentence": "a b", "heads": [[-1, 0]]}, "heads", ["greater than or equal to 0"]),
        ("/api/ablate", {"sentence": "a b", "heads": [[0, 0]] * 513}, "heads", ["at most 512"]),
        ("/api/ablate", {"sentence": "a b", "layer": 6}, "layer", ["0 … 5"]),
        ("/api/ablate", {"sentence": "a b", "head": 12}, "head", ["0 … 11"]),
        ("/api/ablate", {"heads": []}, "sentence", ["Field required"]),
        ("/api/ablate", {"sentence": "a", "prompt": "b"}, "prompt", ["not both"]),
        ("/api/ablate", {"sentence": " "}, "sentence", ["empty"]),
        ("/api/ablate", {"prompt": "word " * 600, "model": "smollm2-135m"}, "prompt", ["601 tokens", "limit is 512"]),
        ("/api/ablate", {"sentence": "a", "model": "nope"}, "model", ["no model 'nope'"]),
        ("/api/lens", {"prompt": "a b", "model": "all-minilm-l6-v2"}, "model", ["BERT", "smollm2-135m"]),
        ("/api/lens", {"prompt": "a b", "position": 2}, "position", ["0 … 1", "2 tokens"]),
        ("/api/lens", {"prompt": ""}, "prompt", ["empty"]),
        ("/api/lens", {"prompt": "a", "extra": 1}, "extra", ["Extra inputs"]),
        ("/api/generate", {"prompt": "a", "ablate": [[30, 0]]}, "ablate", ["ablate[0]", "0 … 29", "30 layers"]),
        ("/api/generate", {"prompt": "a", "ablate": [[0, 9]]}, "ablate", ["ablate[0]", "0 … 8"]),
    ],
)
def test_bad_input_is_a_422_naming_the_field(
    api: TestClient, path: str, body: dict[str, Any], field: str, words: list[str]
) -> None:
    r = api.post(path, json=body)
    assert r.status_code == 422, r.text
    item = r.json()["detail"][0]
    assert item["loc"][:2] == ["body", field], item
    for w in words:
        assert w in item["msg"], item["msg"]
