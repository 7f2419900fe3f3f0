"""GET /api/models and POST /api/generate: the lines a writing streams, what they hold, the one-object
answer, repeatable sampling, stopping, and the 4xx answers that name the field."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from typing import Any

import httpx
import numpy as np
import pytest
import uvicorn
from fastapi.testclient import TestClient

from app.main import create_app
from app.model import generate
from app.model.loader import Model
from tests.servers import free_port

DECODER = "smollm2-135m"


@pytest.fixture(scope="module")
def app_client(smollm: Model) -> TestClient:  # smollm: the decoder is loaded (and converted) once
    return TestClient(create_app(backend="numpy"))


def lines(r: Any) -> list[dict[str, Any]]:  # a TestClient response
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in r.text.splitlines()]


def test_models_side_by_side(app_client: TestClient) -> None:
    models = {m["id"]: m for m in app_client.get("/api/models").json()["models"]}
    assert list(models) == ["all-minilm-l6-v2", DECODER]
    mini, smol = models["all-minilm-l6-v2"], models[DECODER]
    assert mini["default"] and not smol["default"]
    assert (mini["architecture"], mini["layers"], mini["heads"], mini["kv_heads"], mini["d_k"], mini["causal"]) == (
        "bert", 6, 12, 12, 32, False,
    )  # fmt: skip
    assert (smol["architecture"], smol["layers"], smol["heads"], smol["kv_heads"], smol["d_k"], smol["causal"]) == (
        "llama", 30, 9, 3, 64, True,
    )  # fmt: skip
    assert smol["context"] == 8192 and smol["generates"] and not mini["generates"]
    assert app_client.get("/api/models", params={"load": "gpt-5"}).status_code == 422


def test_messages_name_the_model_as_the_model_list_does(app_client: TestClient) -> None:
    """The decoder's file is SmolLM2-135M-Instruct.Q4_1.gguf; the list and every message call it
    SmolLM2-135M-Instruct (spec.display_name), never by the file's quantization tag."""
    name = {m["id"]: m["name"] for m in app_client.get("/api/models").json()["models"]}[DECODER]
    assert name == "SmolLM2-135M-Instruct"
    said = [
        app_client.post("/api/generate", json={"prompt": "word " * 4200, "max_new_tokens": 1}),
        app_client.post("/api/generate", json={"prompt": "a cat", "layer": 30}),
        app_client.post("/api/attention", json={"sentence": "a cat", "model": DECODER, "layer": 30}),
        app_client.post("/api/attention", json={"sentence": "a cat", "model": DECODER, "mask": "full"}),
    ]
    for r in said:
        msg = r.json()["detail"][0]["msg"]
        assert r.status_code == 422 and name in msg and "Q4_1" not in msg, msg


def test_each_line_is_one_new_token(app_client: TestClient, smollm: Model) -> None:
    prompt = "The capital of France is"
    n = len(smollm.tokenizer.encode(prompt))
    got = lines(app_client.post("/api/generate", json={"prompt": prompt, "max_new_tokens": 6, "layer": 20, "head": 4}))
    assert len(got) == 7 and got[-1]["done"] is True and got[-1]["reason"] == "length" and got[-1]["written"] == 6
    assert got[0]["model"] == DECODER and len(got[0]["prompt_tokens"]) == n
    assert got[0]["token"] == " Paris"
    for i, line in enumerate(got[:-1]):
        assert line["index"] == i and line["layer"] == 20 and line["head"] == 4
        assert line["kv_len"] == n + i == len(line["attention"])  # the query reads every cached token
        assert abs(sum(line["attention"]) - 1) < 1e-4 and min(line["attention"]) >= 0
        cands = line["candidates"]
        assert len(cands) == 10 and cands[0]["id"] == line["id"]  # greedy: the first candidate is written
        assert [c["p"] for c in cands] == sorted((c["p"] for c in cands), reverse=True)
        assert cands[0]["p_sample"] == 1.0 and len(line["q"]) == len(line["k"]) == len(line["v"]) == 64
    assert got[-2]["text"] == "".join(line["token"] for line in got[:-1])
    # the same ids as writing directly, and the watched head's weights of the query that chose each token
    direct = list(generate.write(smollm, smollm.tokenizer.encode(prompt).ids, 6, generate.Sampling(), None, 20, 4))
    assert [line["id"] for line in got[:-1]] == [w.id for w in direct if isinstance(w, generate.Written)]
    first = direct[0]
    assert isinstance(first, generate.Written)
    np.testing.assert_allclose(got[0]["attention"], first.watched.weights, atol=1e-6)


def test_one_object_with_accept_json(app_client: TestClient) -> None:
    body = {"prompt": "Once upon a time", "max_new_tokens": 4}
    streamed = lines(app_client.post("/api/generate", json=body))
    r = app_client.post("/api/generate", json=body, headers={"accept": "application/json"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    whole = r.json()
    assert [t["id"] for t in whole["tokens"]] == [line["id"] for line in streamed[:-1]]
    assert (
        whole["done"] is True and whole["reason"] == "length" and whole["prompt_tokens"] == streamed[0]["prompt_tokens"]
    )
    assert whole["tokens"][-1]["layer"] == 29  # the last layer by default


def test_a_seed_makes_sampling_repeatable(app_client: TestClient) -> None:
    body = {"prompt": "My favourite food is", "max_new_tokens": 5, "temperature": 1.3, "top_k": 50, "top_p": 0.95}

    def ids(seed: int) -> list[int]:
        return [line["id"] for line in lines(app_client.post("/api/generate", json={**body, "seed": seed}))[:-1]]

    assert ids(11) == ids(11)
    assert len({tuple(ids(s)) for s in (1, 2, 3)}) > 1


def test_chat_wraps_the_prompt_in_the_template(app_client: TestClient) -> None:
    got = lines(app_client.post("/api/generate", json={"prompt": "Hi", "max_new_tokens": 1, "chat": True}))
    tokens = got[0]["prompt_tokens"]
    assert tokens[0] == "<|im_start|>" and tokens[-3:] == ["ass", "istant", "\n"] and "Hi" in tokens


def test_eos_ends_the_writing(smollm: Model) -> None:
    ids = smollm.tokenizer.encode("The capital of France is").ids
    paris = smollm.tokenizer.encode(" Paris").ids[0]
    model = dataclasses.replace(smollm, spec=dataclasses.replace(smollm.spec, eos=(paris,)))
    steps = list(generate.write(model, ids, 10, generate.Sampling(), None, 0, 0))
    assert len(steps) == 2 and isinstance(steps[-1], generate.Done) and steps[-1].reason == "eos"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"prompt": "x", "max_new_tokens": 0}, "max_new_tokens", "greater than or equal to 1"),
        ({"prompt": "x", "max_new_tokens": 257}, "max_new_tokens", "less than or equal to 256"),
        ({"prompt": "x", "temperature": -0.5}, "temperature", "greater than or equal to 0"),
        ({"prompt": "x", "temperature": 9}, "temperature", "less than or equal to 5"),
        ({"prompt": "x", "top_p": 0}, "top_p", "greater than 0"),
        ({"prompt": "x", "top_k": -1}, "top_k", "greater than or equal to 0"),
        ({"prompt": "x", "seed": -1}, "seed", "greater than or equal to 0"),
        ({"prompt": "x", "head": 9}, "head", "head must be 0 … 8"),
        ({"prompt": "x", "layer": 30}, "layer", "layer must be 0 … 29"),
        ({"prompt": "   "}, "prompt", "prompt is empty"),
        ({"prompt": "word " * 4200}, "prompt", "the limit is 4096 tokens"),
        ({"prompt": "x" * 40_001}, "prompt", "at most 40000 characters"),
        ({"prompt": "x", "model": "gpt-9"}, "model", "no model 'gpt-9': the models are all-minilm-l6-v2, smollm2-135m"),
        ({"prompt": "x", "model": "all-minilm-l6-v2"}, "model", "cannot write here"),
        ({"prompt": "x", "stream": True}, "stream", "Extra inputs are not permitted"),
        ({"max_new_tokens": 3}, "prompt", "Field required"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(
    app_client: TestClient, body: dict[str, Any], field: str, words: str
) -> None:
    r = app_client.post("/api/generate", json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"][0]
    assert detail["loc"] == ["body", field] and words in detail["msg"], detail


def test_closing_the_stream_stops_the_work(smollm: Model, monkeypatch: pytest.MonkeyPatch) -> None:
    steps: list[int] = []
    advance = generate.advance

    def counted(*args: Any, **kwargs: Any) -> Any:
        steps.append(1)
        return advance(*args, **kwargs)

    monkeypatch.setattr(generate, "advance", counted)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(backend="numpy"), port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        body = {"prompt": "Once upon a time", "max_new_tokens": 256}
        with httpx.stream("POST", f"http://127.0.0.1:{port}/api/generate", json=body, timeout=60) as r:
            got = r.iter_lines()
            assert json.loads(next(got))["index"] == 0
            assert json.loads(next(got))["index"] == 1
        time.sleep(1.5)
        stopped_at = len(steps)
        time.sleep(1.5)
        assert len(steps) == stopped_at < 40  # no step after the close; far fewer than 256
    finally:
        server.should_exit = True
        thread.join(10)


def test_sentence_routes_take_the_model(app_client: TestClient) -> None:
    sentence = "The cat ate its fish because it was hungry."
    body = {"sentence": sentence, "model": DECODER, "layer": 3}
    a = app_client.post("/api/attention", json={**body, "head": 4}).json()
    n = len(a["tokens"])
    assert a["kind"] == "llama" and a["mask"] == "causal" and a["d_k"] == 64 and np.shape(a["weights"]) == (n, n)
    assert np.allclose(np.triu(np.array(a["weights"]), 1), 0)
    group = [app_client.post("/api/attention", json={**body, "head": h}).json()["k"] for h in (3, 5, 6)]
    assert group[0] == group[1] != group[2]  # heads 3 and 5 read KV head 1; head 6 reads KV head 2
    heads = app_client.post("/api/heads", json={"sentence": sentence, "model": DECODER}).json()
    assert (heads["layers"], heads["heads"]) == (30, 9) and np.shape(heads["weights"]) == (30, 9, n, n)
    overview = app_client.post("/api/overview", json={"sentence": sentence, "model": DECODER}).json()
    assert (overview["layers"], overview["heads"]) == (30, 9) and np.shape(overview["entropy"]) == (30, 9)
    mini = app_client.post("/api/attention", json={"sentence": sentence, "layer": 0, "head": 0}).json()
    assert mini["kind"] == "bert" and mini["tokens"][0] == "[CLS]"  # no model: the server's own


@pytest.mark.parametrize(
    ("route", "body", "words"),
    [
        ("/api/attention", {"sentence": "a cat", "model": "gpt-9"}, "no model 'gpt-9'"),
        ("/api/heads", {"sentence": "a cat", "model": "gpt-9"}, "no model 'gpt-9'"),
        ("/api/block", {"sentence": "a cat", "model": DECODER}, "BERT and GPT-2 blocks"),
        ("/api/attention", {"q": [[1.0]], "k": [[1.0]], "v": [[1.0]], "model": DECODER}, "goes with sentence"),
        ("/api/attention", {"sentence": "a cat", "model": DECODER, "mask": "full"}, "causal by nature"),
    ],
)
def test_sentence_routes_refuse_what_the_model_cannot_do(
    app_client: TestClient, route: str, body: dict[str, Any], words: str
) -> None:
    r = app_client.post(route, json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"][0]
    assert words in detail["msg"] and detail["loc"][-1] in ("model", "mask"), detail


def test_todays_numbers(app_client: TestClient) -> None:
    body = {"sentence": "The cat ate its fish because it was hungry.", "layer": 3, "head": 4}
    a = app_client.post("/api/decoder/today", json=body).json()
    assert a["groups"] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and a["kv_head"] == 1
    assert 0.6 < a["sink"] < 0.7 and len(a["sink_by_layer"]) == 30  # the issue measured 0.66
    assert max(a["shift_scores"]) - min(a["shift_scores"]) < 1e-9  # RoPE: only the distance counts
    assert max(a["distance_scores"]) - min(a["distance_scores"]) > 0.5
    assert a["cache_bytes_per_token"] * 3 == a["cache_bytes_per_token_mha"] == 138240
    w = np.array(a["weights"])
    assert np.allclose(w.sum(axis=1), 1) and np.allclose(np.triu(w, 1), 0)
    r = app_client.post("/api/decoder/today", json={**body, "head": 9})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "head"]


def test_a_class_opening_todays_chapter_runs_the_decoder_once(
    app_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every phone of a class asks for the chapter's numbers of the same sentence: the decoder runs for the
    first; the others, at any layer and head, answer from the server's trace of it."""
    runs: list[int] = []
    forward = Model.forward

    def counted(self: Model, *args: Any, **kwargs: Any) -> Any:
        runs.append(1)
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(Model, "forward", counted)
    body = {"sentence": "A class of phones reads one sentence at once.", "layer": 3, "head": 4}
    first = app_client.post("/api/decoder/today", json=body).json()
    for layer, head in [(3, 4), (0, 0), (29, 8)]:
        again = app_client.post("/api/decoder/today", json={**body, "layer": layer, "head": head})
        assert again.status_code == 200 and again.json()["layer"] == layer
    assert len(runs) == 1
    assert app_client.post("/api/decoder/today", json=body).json() == first
