"""write() in a notebook: the API's writing to the last digit, and controls that move the view;
show(sentence=…, model="smollm2-135m"): the decoder's attention as the API answers it."""

from __future__ import annotations

import orjson
import pytest
from fastapi.testclient import TestClient

from app.errors import InputError
from app.main import create_app
from app.model.loader import Model

notebook = pytest.importorskip("app.notebook", reason="the notebook extra is not installed")
write, show = notebook.write, notebook.show


@pytest.fixture(scope="module")
def api(smollm: Model) -> TestClient:
    return TestClient(create_app(backend="numpy"))


@pytest.fixture(autouse=True)
def numpy_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_BACKEND", "numpy")


@pytest.mark.parametrize("off", [[], [[23, 4]]], ids=["every-head", "head-23-4-off"])
def test_write_is_the_apis_writing(api: TestClient, off: list[list[int]]) -> None:
    body = {"prompt": "The capital of France is", "max_new_tokens": 4, "layer": 12, "head": 5, "ablate": off}
    view = write(body["prompt"], max_new_tokens=4, layer=12, head=5, ablate=[(p[0], p[1]) for p in off])
    r = api.post("/api/generate", json=body, headers={"accept": "application/json"}).json()
    ours = {k: v for k, v in view.result.items() if k != "seconds"}
    theirs = {k: v for k, v in r.items() if k != "seconds"}
    assert orjson.dumps(ours) == orjson.dumps(theirs)
    first = view.result["tokens"][0]
    paris = next(c["p"] for c in first["candidates"] if c["token"] == " Paris")
    if off:  # layer 23's head 4 carries most of " Paris" (the Look inside chapter's question)
        assert paris < 0.3, paris
    else:
        assert first["token"] == " Paris" and paris > 0.7, paris


def test_the_controls_move_the_view() -> None:
    view = write("Once upon a time", max_new_tokens=3)
    assert view.step_control.max == 2 and "→" in view.cache_html.value
    before_cache, before_bars = view.cache_html.value, view.bars_html.value
    assert "1.000" in before_bars  # greedy: the likeliest is drawn for sure
    view.step_control.value = 0
    assert view.cache_html.value != before_cache and view.cache_html.value.count("<span") == 4  # the prompt alone
    view.temperature.value = 1.0
    assert view.bars_html.value != before_bars and "1.000</td>" not in view.bars_html.value
    view.top_k.value = 1
    assert view.bars_html.value.count(">1.000</td>") == 1  # top-k 1: one candidate left, drawn for sure
    assert "attention sink" in view.cache_html.value


def test_show_takes_the_decoder(api: TestClient) -> None:
    sentence = "The cat ate its fish."
    view = show(sentence=sentence, model="smollm2-135m", layer=4, head=2)
    r = api.post("/api/attention", json={"sentence": sentence, "model": "smollm2-135m", "layer": 4, "head": 2})
    assert view.result == r.json() and view.result["kind"] == "llama" and view.result["mask"] == "causal"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: write("x", max_new_tokens=0), "max_new_tokens"),
        (lambda: write("x", top_p=0), "top_p"),
        (lambda: write("x", head=9), "head"),
        (lambda: write("   "), "prompt"),
        (lambda: write("x", model="all-minilm-l6-v2"), "model"),
        (lambda: write("x", ablate=[(30, 0)]), "ablate"),
        (lambda: show(sentence="a cat", model="gpt-9"), "model"),
        (lambda: show(model="smollm2-135m"), "model"),
    ],
)
def test_bad_input_names_the_field(call, field: str) -> None:
    with pytest.raises(InputError) as e:
        call()
    assert e.value.field == field, e.value.message
