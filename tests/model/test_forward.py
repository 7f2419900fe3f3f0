"""The forward pass's own attention, its blocks of rows, partial traces, and the whole forward on torch."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app import frame
from app.attention import attention, torch_available
from app.model import nn
from app.model.loader import ModelHandle, handle_for
from tests.model.fixtures import SENTENCES

LONG = "the animal didn't cross the street because it was too tired, so it lay down. " * 8  # ~170 tokens
needs_torch = pytest.mark.skipif(not torch_available(), reason="torch is not installed")


@pytest.mark.parametrize("mask", ["full", "causal"])
def test_attend_is_app_attention_in_float32(mask: Any) -> None:
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(0, 2, (5, 70, 16)).astype(np.float32) for _ in range(3))
    exact = attention(q, k, v, mask).output  # float64, every stage
    ours = nn.attend(q, k, v, mask)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, exact, atol=1e-5, rtol=0)  # float32's own rounding
    # A block of query rows over every key is those rows of the whole (what the threads compute).
    np.testing.assert_allclose(nn.attend(q[:, 30:50], k, v, mask, first=30), exact[:, 30:50], atol=1e-5, rtol=0)


def test_row_blocks_cover_every_row_once() -> None:
    for n in (1, 5, 63, 64, 65, 127, 305, 512):
        blocks = nn.row_blocks(n)
        assert blocks[0].start == 0 and blocks[-1].stop == n
        assert all(a.stop == b.start for a, b in itertools.pairwise(blocks))
        assert all(0 < b.stop - b.start <= 256 for b in blocks)
    assert len(nn.row_blocks(20)) == 1  # a short sentence stays on one thread
    assert len(nn.row_blocks(305)) % nn.WORKERS == 0  # a long one is shared out evenly


def test_parallel_keeps_order_and_raises() -> None:
    assert nn.parallel(lambda i: i * i, list(range(50))) == [i * i for i in range(50)]

    def boom(i: int) -> int:
        if i == 7:
            raise ValueError("seven")
        return i

    with pytest.raises(ValueError, match="seven"):
        nn.parallel(boom, list(range(10)))


def _same(a: Any, b: Any, layers: int, atol: float = 0.0) -> None:
    for name in ("q", "k", "v"):
        for i in range(layers):
            np.testing.assert_allclose(getattr(a, name)[i], getattr(b, name)[i], atol=atol, rtol=0, err_msg=name)
    for i in range(layers + 1):
        np.testing.assert_allclose(a.hidden[i], b.hidden[i], atol=atol, rtol=0, err_msg=f"hidden {i}")


def test_partial_traces_extend_to_the_full_one(minilm: ModelHandle) -> None:
    model = minilm.model()
    ids = minilm.encode(LONG).ids
    full = model.forward(ids)
    two = model.forward(ids, layers=2)
    assert (two.layers, len(two.hidden), full.layers) == (2, 3, 6)
    _same(two, full, 2)
    five = model.forward(ids, layers=5, start=two)
    assert five.layers == 5 and five.q[0] is two.q[0]  # layers already run are kept, not rerun
    _same(model.forward(ids, start=five), full, 6)


def test_partial_gpt2_takes_the_final_norm_only_when_complete(tiny_gpt2_dir: Path) -> None:
    handle = handle_for(tiny_gpt2_dir)
    model = handle.model()
    ids = handle.encode(SENTENCES[0]).ids
    full = model.forward(ids)
    one = model.forward(ids, layers=1)
    _same(one, full, 1)  # hidden[1] is the residual stream, as transformers' hidden_states[1]
    _same(model.forward(ids, start=one), full, 2)  # the last, after ln_f


def test_the_cache_extends_a_sentence_layer_by_layer(minilm: ModelHandle) -> None:
    handle = ModelHandle(minilm.path)  # a cache of its own
    handle._model = minilm.model()
    s = "A sentence walked through from the first layer to the last."
    enc = handle.encode(s)
    t2 = handle.trace(s, enc, "numpy", 3)
    assert t2.layers == 3
    assert handle.trace(s, enc, "numpy", 1) is t2  # an earlier layer: from the cache
    full = handle.trace(s, enc, "numpy")
    assert full.layers == 6 and full.q[2] is t2.q[2]  # extended, not rerun
    assert handle.trace(s, enc, "numpy", 3) is full
    _same(full, minilm.model().forward(enc.ids), 6)


def test_a_view_of_layer_2_runs_layers_0_to_2(api: TestClient, minilm: ModelHandle) -> None:
    s = "Only the first three layers run for a view of layer two."
    r = api.post("/api/attention", json={"sentence": s, "layer": 2, "head": 4})
    assert r.status_code == 200
    key = f"numpy\0{s}"
    assert minilm._cache[key][1].layers == 3
    r = api.post("/api/attention", json={"sentence": s, "layer": 5, "head": 4})
    assert r.status_code == 200 and minilm._cache[key][1].layers == 6
    trace = minilm.model().forward(minilm.encode(s).ids)
    ref = attention(trace.q[5][4], trace.k[5][4], trace.v[5][4])  # float64, from the model's own q, k, v
    np.testing.assert_allclose(np.array(r.json()["weights"]), ref.weights, atol=1e-15, rtol=0)


def test_json_q_k_v_are_the_float64_numbers_of_the_stages(api: TestClient) -> None:
    body = {"sentence": "The animal didn't cross the street because it was too tired.", "layer": 3, "head": 1}
    j = api.post("/api/attention", json=body).json()
    q, k = np.array(j["q"], dtype=np.float64), np.array(j["k"], dtype=np.float64)
    np.testing.assert_allclose(q @ k.T, np.array(j["scores"]), rtol=1e-15, atol=1e-14)  # q·kᵀ gives back scores
    _, arrays = frame.decode(api.post("/api/attention", json=body, headers={"accept": frame.FRAME_MEDIA_TYPE}).content)
    for name in ("q", "k", "v", "scores"):
        assert np.array_equal(np.array(j[name], dtype=np.float64), arrays[name]), name  # JSON = frame, digit for digit


@needs_torch
@pytest.mark.parametrize("which", ["minilm", "gpt2"])
def test_the_whole_forward_runs_on_torch(
    which: str, minilm: ModelHandle, tiny_gpt2_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = minilm if which == "minilm" else handle_for(tiny_gpt2_dir)
    model = handle.model()
    ids = handle.encode(LONG if which == "minilm" else SENTENCES[0]).ids
    ours = model.forward(ids, "numpy")

    def numpy_called(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the torch backend called a NumPy step")

    for name in ("layer_norm", "attend", "gelu", "gelu_tanh", "erf", "split_heads", "merge_heads"):
        monkeypatch.setattr(nn, name, numpy_called)
    monkeypatch.setitem(nn.ACTIVATIONS, "gelu", numpy_called)
    theirs = model.forward(ids, "torch")
    part = model.forward(ids, "torch", layers=1)
    monkeypatch.undo()
    layers = model.spec.layers
    _same(theirs, ours, layers, atol=1e-5)
    _same(model.forward(ids, "torch", start=part), ours, layers, atol=1e-5)
    assert all(a.dtype == np.float32 and isinstance(a, np.ndarray) for a in theirs.q + theirs.hidden)
    import torch

    assert nn.ops("torch").device.type == ("cuda" if torch.cuda.is_available() else "cpu")  # type: ignore[attr-defined]


@needs_torch
def test_torch_forward_against_transformers(minilm: ModelHandle, hf_minilm: Any) -> None:
    import torch

    ids = minilm.encode(SENTENCES[0]).ids
    trace = minilm.model().forward(ids, "torch")
    with torch.no_grad():
        out = hf_minilm(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    for layer, theirs in enumerate(out.attentions):
        ours = attention(trace.q[layer], trace.k[layer], trace.v[layer], "full").weights
        np.testing.assert_allclose(ours, theirs[0].numpy(), atol=1e-5, rtol=0, err_msg=f"layer {layer}")
    np.testing.assert_allclose(trace.hidden[-1], out.hidden_states[-1][0].numpy(), atol=1e-5, rtol=0)


def test_a_views_last_layer_stays_open_until_asked_for(minilm: ModelHandle, tiny_gpt2_dir: Path) -> None:
    """A view of layer L needs layer L's q, k, v, not its attention or feed-forward: the trace
    leaves that layer open, and finishing it later gives the full forward's numbers exactly."""
    for handle in (minilm, handle_for(tiny_gpt2_dir)):
        model = handle.model()
        ids = handle.encode(SENTENCES[0]).ids
        full = model.forward(ids)
        top = model.spec.layers
        view = model.forward(ids, layers=top, open_last=True)
        assert (view.layers, len(view.hidden), view.complete) == (top, top, False)  # the last layer's output not run
        _same(view, full, top - 1)
        for name in ("q", "k", "v"):
            np.testing.assert_array_equal(getattr(view, name)[-1], getattr(full, name)[-1])
        done = model.forward(ids, start=view)
        assert done.complete and done.q[-1] is view.q[-1]  # finished, not rerun
        _same(done, full, top)  # GPT-2: the last hidden state after ln_f, as when run at once


def test_the_cache_finishes_an_open_layer_for_a_full_trace(minilm: ModelHandle) -> None:
    handle = ModelHandle(minilm.path)  # a cache of its own
    handle._model = minilm.model()
    s = "The last layer of a view is left open until a full trace is asked for."
    enc = handle.encode(s)
    view = handle.trace(s, enc, "numpy", 6)
    assert view.layers == 6 and not view.complete
    full = handle.trace(s, enc, "numpy")
    assert full.complete and full.q[5] is view.q[5]
    assert handle.trace(s, enc, "numpy", 6) is full  # the complete trace serves views too
    _same(full, minilm.model().forward(enc.ids), 6)


def test_bert_multiplies_by_column_major_weights_with_the_same_numbers(
    minilm: ModelHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forward lays each linear weight out column by column once (bert.column_major): the same
    values and shape, and a forward on row-major copies of them gives the very same trace."""
    import dataclasses

    from app.model import forward
    from app.model.families import FAMILIES

    model = minilm.model()
    ids = minilm.encode(SENTENCES[0]).ids
    trace = model.forward(ids)
    name = "encoder.layer.3.intermediate.dense.weight"
    w = model.weights[name]
    assert w.shape == (1536, 384) and w.flags.f_contiguous and not w.flags.writeable
    rows = {k: np.ascontiguousarray(a) for k, a in model.weights.items()}
    assert not rows[name].flags.f_contiguous
    monkeypatch.setitem(FAMILIES, "bert", dataclasses.replace(FAMILIES["bert"], prepare=lambda w, s: None))
    plain = forward.trace(ids, rows, minilm.spec())  # no layout step
    assert not rows[name].flags.f_contiguous
    for a, b in zip(trace.hidden, plain.hidden, strict=True):
        np.testing.assert_array_equal(a, b)
