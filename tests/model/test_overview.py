"""The overview's summaries (app.model.summary), POST /api/overview, one forward per sentence,
and the bounded queue's 503: against a float64 reference computed here from the model's q, k."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.attention import Mask, attention
from app.main import create_app
from app.model import nn, service, summary
from app.model.loader import Model, ModelHandle
from app.model.trace import Trace
from app.web import transport
from tests.asyncrun import run_async

ANIMAL = "The animal didn't cross the street because it was too tired."
LONG = " ".join(["the cat sat on the mat while the dog slept by the warm fire"] * 36)  # 506 tokens


def reference(trace: Trace, layer: int, head: int, mask: Mask, edges: np.ndarray) -> dict[str, Any]:
    """One head's summaries the slow, obvious way: float64 weights and loops over blocks."""
    q, k, v = (a[layer][head].astype(np.float64) for a in (trace.q, trace.k, trace.v))
    w = attention(q, k, v, mask).weights  # (n, n)
    n = w.shape[0]
    logs = np.log2(np.where(w > 0, w, 1.0))
    gaps = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    blocks = range(len(edges) - 1)
    pooled = [[w[edges[a] : edges[a + 1], edges[b] : edges[b + 1]].sum(axis=1).mean() for b in blocks] for a in blocks]
    strongest = sorted(range(n), key=lambda i: -w[i].max())[:8]
    return {
        "entropy": float(-(w * logs).sum(axis=1).mean()),
        "distance": float((w * gaps).sum(axis=1).mean()),
        "pooled": np.array(pooled),
        "top_weight": np.array([w[i].max() for i in strongest]),
        "top_key": [int(w[i].argmax()) for i in strongest],
    }


@pytest.mark.parametrize("mask", ["full", "causal"])
@pytest.mark.parametrize("text", [ANIMAL, LONG])
def test_summaries_match_a_float64_reference(minilm: ModelHandle, text: str, mask: Mask) -> None:
    model = minilm.model()
    trace = model.forward(model.tokenizer.encode(text).ids)
    s = summary.summarize(trace, mask)
    n = trace.q[0].shape[1]
    assert s.pooled.shape == (6, 12, min(n, summary.BINS), min(n, summary.BINS))
    assert s.edges[0] == 0 and s.edges[-1] == n
    np.testing.assert_allclose(s.pooled.sum(axis=-1), 1, atol=1e-5)  # block rows still sum to 1
    for layer, head in [(0, 0), (3, 1), (5, 11)]:
        ref = reference(trace, layer, head, mask, s.edges)
        assert s.entropy[layer, head] == pytest.approx(ref["entropy"], abs=1e-4)
        assert s.distance[layer, head] == pytest.approx(ref["distance"], abs=1e-3)
        np.testing.assert_allclose(s.pooled[layer, head], ref["pooled"], atol=1e-6)
        np.testing.assert_allclose(s.top_weight[layer, head], ref["top_weight"], atol=1e-6)
        assert list(s.top_key[layer, head]) == ref["top_key"]
    if mask == "causal" and n <= summary.BINS:  # one token per block: nothing above the diagonal
        assert np.triu(s.pooled, 1).max() == 0


def test_gathered_during_the_forward_as_recomputed(minilm: ModelHandle) -> None:
    """The observer sees the forward's own weights: the same summaries, and the same trace."""
    model = minilm.model()
    ids = model.tokenizer.encode(LONG).ids
    plain = model.forward(ids)
    collector = summary.Collector(len(ids), 12, "full")
    token = nn.observing(collector)
    try:
        partial = model.forward(ids, layers=3, open_last=True)  # layers 0, 1 run, 2 left open
        observed = model.forward(ids, start=partial)  # 2 … 5 run now
    finally:
        nn.stop_observing(token)
    assert len(collector.layers) == 6  # layer 2's attention ran in the second call, and was seen
    for a, b in zip(plain.hidden, observed.hidden, strict=True):
        np.testing.assert_array_equal(a, b)
    # The forward computes a block of query rows at a time, the recompute every row at once: BLAS may
    # take another kernel for another shape, so the two agree to float32 rounding, not bit for bit
    # (on an AMD EPYC 20% of the pooled cells differ in the last bit).
    seen, recomputed = collector.summary(observed), summary.summarize(observed, "full")
    for name in ("pooled", "entropy", "distance", "top_weight"):
        np.testing.assert_allclose(getattr(seen, name), getattr(recomputed, name), rtol=1e-5, atol=1e-7)
    for name in ("top_query", "top_key"):
        np.testing.assert_array_equal(getattr(seen, name), getattr(recomputed, name))


def test_overview_answers_up_to_the_models_limit(api: TestClient, minilm: ModelHandle) -> None:
    r = api.post("/api/overview", json={"sentence": LONG})
    assert r.status_code == 200, r.text
    j = r.json()
    n = len(j["tokens"])
    assert n == 506 and j["layers"] == 6 and j["heads"] == 12 and j["mask"] == "full"
    assert len(j["edges"]) == 33 and j["edges"][-1] == n
    pooled = np.array(j["pooled"])
    assert pooled.shape == (6, 12, 32, 32)
    assert np.abs(pooled.sum(axis=-1) - 1000).max() <= 32  # thousandths, each rounded
    top = np.array(j["top"])
    assert top.shape == (6, 12, 8, 3) and (np.diff(top[..., 2], axis=-1) <= 0).all()  # strongest first
    assert min(map(min, j["entropy"])) > 0 and max(map(max, j["entropy"])) < np.log2(n)


def test_overview_refuses_what_the_model_cannot_read(api: TestClient) -> None:
    r = api.post("/api/overview", json={"sentence": "word " * 600})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "sentence"]
    assert "512" in r.json()["detail"][0]["msg"]
    r = api.post("/api/overview", json={"sentence": "a", "mask": "sideways"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "mask"]
    r = api.post("/api/overview", json={"sentence": "a", "extra": 1})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "extra"]


def test_one_forward_however_many_ask(minilm: ModelHandle, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight requests for one new sentence at once (views of two layers, both masks, the overview),
    on one event loop as a server has: the layers run once."""
    forward = Model.forward
    layers_run: list[int] = []
    lock = threading.Lock()

    def counted(self: Model, ids: list[int], *args: Any, **kwargs: Any) -> Trace:
        start = kwargs.get("start") or (args[2] if len(args) > 2 else None)
        trace = forward(self, ids, *args, **kwargs)
        with lock:
            layers_run.append(trace.layers - (start.layers if start is not None else 0))
        return trace

    monkeypatch.setattr(Model, "forward", counted)
    # the queue's bound is not what this tests: on a busy machine earlier requests may have held a
    # slot long enough for the bound to refuse some of these eight (test_a_full_queue… tests it)
    monkeypatch.setattr(transport, "MAX_WAIT_S", 1e9)
    text = "A sentence nobody has sent before, to count its forward passes: " + "word " * 40
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("/api/attention", {"sentence": text, "layer": 0, "head": 0, "mask": m}) for m in ("full", "causal")
    ] * 3
    bodies += [("/api/overview", {"sentence": text}), ("/api/attention", {"sentence": text, "layer": 5, "head": 2})]

    async def all_at_once() -> list[int]:
        transport_ = httpx.ASGITransport(app=create_app(backend="numpy"))
        async with httpx.AsyncClient(transport=transport_, base_url="http://test") as client:
            codes: list[int] = []

            async def one(path: str, body: dict[str, Any]) -> None:
                codes.append((await client.post(path, json=body)).status_code)

            async with anyio.create_task_group() as tasks:
                for path, body in bodies:
                    tasks.start_soon(one, path, body)
            return codes

    assert run_async(all_at_once) == [200] * len(bodies)
    assert sum(layers_run) <= 6 + 1, layers_run  # every layer once (a view's open layer may add its q, k, v once)


def test_a_full_queue_is_refused_with_retry_after(api: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "expected_wait", lambda: 7.2)
    r = api.post("/api/attention", json={"sentence": ANIMAL, "layer": 0, "head": 0})
    assert r.status_code == 503 and r.headers["retry-after"] == "8"
    assert r.json()["detail"][0]["type"] == "busy" and "8 s" in r.json()["detail"][0]["msg"]
    r = api.post("/api/overview", json={"sentence": ANIMAL})
    assert r.status_code == 503 and r.headers["retry-after"] == "8"


def test_expected_wait_follows_the_time_a_slot_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    held = transport._Held(weight=0.5)
    monkeypatch.setattr(transport, "HELD", held)
    held.add(0.4)
    held.add(0.4)
    assert held.mean == pytest.approx(0.3)
    assert transport.expected_wait() == 0.0  # a slot is free: no wait
    assert transport.busy(0.2).headers == {"Retry-After": "1"}  # never less than a second


def test_service_summaries_are_kept(minilm: ModelHandle) -> None:
    text = "Kept once, " + ANIMAL
    encoded = minilm.encode(text)
    first = service.summary_of(minilm, text, encoded, "full", "numpy")
    assert service.summary_of(minilm, text, encoded, "full", "numpy") is first
    other = service.summary_of(minilm, text, encoded, "causal", "numpy")
    assert not np.array_equal(other.pooled, first.pooled)


def test_the_overview_runs_no_more_of_the_forward_than_it_needs(minilm: ModelHandle) -> None:
    """The overview needs every layer's weights, not the last layer's output: its forward stops at
    that layer's q, k, v, and its summaries are those of the whole forward."""
    text = "Left open at the end, " + ANIMAL
    encoded = minilm.encode(text)
    s = service.summary_of(minilm, text, encoded, "full", "numpy")
    trace = minilm.trace(text, encoded, "numpy", 6)  # from the cache: what the overview left there
    assert trace.layers == 6 and not trace.complete and len(trace.hidden) == 6
    whole = summary.summarize(minilm.model().forward(encoded.ids), "full")
    for name in ("pooled", "entropy", "distance", "top_weight"):
        np.testing.assert_allclose(getattr(s, name), getattr(whole, name), rtol=1e-5, atol=1e-7, err_msg=name)
    np.testing.assert_array_equal(s.top_key, whole.top_key)
