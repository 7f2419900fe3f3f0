"""Loading: once, lazily, thread-safely, in the background on request; torch agrees with NumPy."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app import limits
from app.attention import torch_available
from app.main import create_app
from app.model import loader
from app.model.loader import ModelHandle
from app.model.spec import ModelSpec
from app.model.tokenizer import Encoded


def test_loads_once_under_concurrent_first_requests(monkeypatch: pytest.MonkeyPatch, tiny_gpt2_dir: Path) -> None:
    calls: list[int] = []
    real = loader.load
    started, release = threading.Event(), threading.Event()

    def slow_load(spec: ModelSpec) -> loader.Model:
        calls.append(1)
        started.set()
        release.wait(30)  # held while every thread arrives
        return real(spec)

    monkeypatch.setattr(loader, "load", slow_load)
    handle = ModelHandle(tiny_gpt2_dir)
    assert not handle.loaded and not handle.loading
    got: list[loader.Model] = []
    threads = [threading.Thread(target=lambda: got.append(handle.model())) for _ in range(8)]
    for t in threads:
        t.start()
    assert started.wait(30)  # the first thread is loading (however slowly the machine starts threads)
    assert handle.loading
    time.sleep(0.2)  # the other seven ask meanwhile
    release.set()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 8 and all(m is got[0] for m in got)
    assert handle.loaded and not handle.loading


def test_model_info_before_and_after_loading(tmp_path: Path, tiny_gpt2_dir: Path) -> None:
    fresh = tmp_path / "tiny-gpt2-copy"  # a directory no other test has loaded
    shutil.copytree(tiny_gpt2_dir, fresh)
    client = TestClient(create_app(backend="numpy", model=str(fresh)))
    info = client.get("/api/model").json()
    assert info["loaded"] is False and info["load_seconds"] is None and info["name"] == "tiny-gpt2-copy"
    assert client.get("/api/model?load=true").json()["loading"] is True  # loads in a thread, answers at once
    deadline = time.monotonic() + 30
    while not (info := client.get("/api/model").json())["loaded"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert info["loaded"] is True and info["load_seconds"] > 0


def test_missing_model_is_503_not_500(tmp_path: Path) -> None:
    client = TestClient(create_app(backend="numpy", model=str(tmp_path / "nowhere")))
    for r in (
        client.get("/api/model"),
        client.post("/api/attention", json={"sentence": "hi"}),
        client.post("/api/heads", json={"sentence": "hi"}),
    ):
        assert r.status_code == 503 and r.json()["detail"][0]["type"] == "model_unavailable"


def test_sentence_cache_is_bounded(tiny_gpt2_dir: Path) -> None:
    handle = ModelHandle(tiny_gpt2_dir)
    for i in range(20):
        s = f"sentence {i}"
        handle.trace(s, handle.encode(s), "numpy")
    assert len(handle._cache) == limits.MODEL_CACHE_SENTENCES
    s = "sentence 19"
    assert handle.trace(s, handle.encode(s), "numpy") is handle.trace(s, handle.encode(s), "numpy")


def test_a_cached_sentence_is_not_tokenized_again(tiny_gpt2_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A view's layer or head, or the overview, of a sentence whose trace is cached reuses its tokens."""
    handle = ModelHandle(tiny_gpt2_dir)
    tokenizer = handle.model().tokenizer
    calls: list[str] = []
    real = tokenizer.encode

    def counted(sentence: str) -> Encoded:
        calls.append(sentence)
        return real(sentence)

    monkeypatch.setattr(tokenizer, "encode", counted)
    first = handle.encode("a sentence")
    assert calls == ["a sentence"] and handle.encode("a sentence") is not first  # not cached yet: tokenized again
    handle.trace("a sentence", first, "numpy")
    again = handle.encode("a sentence")
    assert again is first and calls == ["a sentence"] * 2
    assert handle.encode("another one").tokens != first.tokens and calls[-1] == "another one"


def test_sentence_cache_is_bounded_in_bytes(tiny_gpt2_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decoder's traces are large (SmolLM2 at 512 tokens: ~96 MB each): the cache holds the most
    recent ones that fit in MODEL_CACHE_BYTES, and always the newest."""
    handle = ModelHandle(tiny_gpt2_dir)
    first = handle.trace("sentence 0", handle.encode("sentence 0"), "numpy")
    monkeypatch.setattr(limits, "MODEL_CACHE_BYTES", 3 * first.nbytes)
    for i in range(1, 6):
        s = f"sentence {i}"
        handle.trace(s, handle.encode(s), "numpy")
    assert [k.split("\0")[1] for k in handle._cache] == ["sentence 3", "sentence 4", "sentence 5"]
    monkeypatch.setattr(limits, "MODEL_CACHE_BYTES", 1)  # smaller than any trace: the newest stays
    handle.trace("long", handle.encode("long"), "numpy")
    assert [k.split("\0")[1] for k in handle._cache] == ["long"]


@pytest.mark.skipif(not torch_available(), reason="torch is not installed")
def test_torch_backend_agrees(minilm: ModelHandle) -> None:
    ids = minilm.encode("The animal didn't cross the street because it was too tired.").ids
    a, b = minilm.model().forward(ids, "numpy"), minilm.model().forward(ids, "torch")
    for layer in range(6):
        np.testing.assert_allclose(a.q[layer], b.q[layer], atol=1e-5, rtol=0)
    np.testing.assert_allclose(a.hidden[-1], b.hidden[-1], atol=1e-5, rtol=0)
