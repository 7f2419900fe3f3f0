"""The NumPy forward passes against transformers' own (eager attention), every layer and head."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.attention import attention
from app.model.loader import ModelHandle, handle_for
from tests.model.fixtures import SENTENCES

TOL = 1e-5  # the bound docs/model.md gives for attention weights (and hidden states, q, k, v); measured ≤ 6e-6
pytestmark = pytest.mark.usefixtures("each_blas")  # every test with MKL's products and with NumPy's BLAS


def _hf(model: Any, ids: list[int]) -> Any:
    import torch

    with torch.no_grad():
        return model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_minilm_weights_every_layer_and_head(minilm: ModelHandle, hf_minilm: Any, sentence: str) -> None:
    enc = minilm.encode(sentence)
    trace = minilm.model().forward(enc.ids)
    out = _hf(hf_minilm, enc.ids)
    assert len(out.attentions) == len(trace.q) == 6
    for layer, theirs in enumerate(out.attentions):
        ours = attention(trace.q[layer], trace.k[layer], trace.v[layer], "full").weights  # (12, n, n)
        assert ours.shape == (12, len(enc), len(enc))
        np.testing.assert_allclose(ours, theirs[0].numpy(), atol=TOL, rtol=0, err_msg=f"layer {layer}")


@pytest.mark.parametrize("sentence", SENTENCES[:3])
def test_minilm_hidden_states_and_queries(minilm: ModelHandle, hf_minilm: Any, sentence: str) -> None:
    import torch

    enc = minilm.encode(sentence)
    trace = minilm.model().forward(enc.ids)
    out = _hf(hf_minilm, enc.ids)
    for i, h in enumerate(out.hidden_states):
        np.testing.assert_allclose(trace.hidden[i], h[0].numpy(), atol=TOL, rtol=0, err_msg=f"hidden {i}")
    n = len(enc)
    for layer, block in enumerate(hf_minilm.encoder.layer):
        with torch.no_grad():
            for name, ours in (("query", trace.q), ("key", trace.k), ("value", trace.v)):
                proj = getattr(block.attention.self, name)(out.hidden_states[layer])  # (1, n, 384)
                theirs = proj[0].view(n, 12, 32).transpose(0, 1).numpy()  # (12, n, 32)
                np.testing.assert_allclose(ours[layer], theirs, atol=TOL, rtol=0, err_msg=f"{name} {layer}")


def test_minilm_tokens_as_the_model_sees_them(minilm: ModelHandle) -> None:
    enc = minilm.encode("Café naïve — it's déjà vu! Tokenization")
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    assert enc.words[0] is None and enc.words[-1] is None and enc.spans[0] is None
    assert "cafe" in enc.tokens and "##ization" in enc.tokens  # uncased, accents stripped, word pieces
    de, ja = enc.tokens.index("de"), enc.tokens.index("##ja")
    assert enc.words[de] == enc.words[ja]  # pieces of one word share its index: a view can merge them
    first, last = enc.spans[de], enc.spans[ja]
    assert first is not None and last is not None
    assert "Café naïve — it's déjà vu! Tokenization"[first[0] : last[1]] == "déjà"  # spans index the original


def test_minilm_long_sentence(minilm: ModelHandle, hf_minilm: Any) -> None:
    enc = minilm.encode("the animal didn't cross the street because it was too tired. " * 35)
    assert 400 < len(enc) <= 512
    trace = minilm.model().forward(enc.ids)
    out = _hf(hf_minilm, enc.ids)
    for layer in (0, 5):
        ours = attention(trace.q[layer], trace.k[layer], trace.v[layer], "full").weights
        np.testing.assert_allclose(ours, out.attentions[layer][0].numpy(), atol=TOL, rtol=0)


@pytest.mark.parametrize("sentence", [*SENTENCES, "Über straße, ünïcödé 🙂"])
def test_tiny_gpt2_every_layer_and_head(tiny_gpt2_dir: Path, hf_gpt2: Any, sentence: str) -> None:
    handle = handle_for(tiny_gpt2_dir)
    assert handle.spec().kind == "gpt2" and handle.spec().causal
    enc = handle.encode(sentence)
    trace = handle.model().forward(enc.ids)
    out = _hf(hf_gpt2, enc.ids)
    assert len(out.attentions) == len(trace.q) == 2
    for layer, theirs in enumerate(out.attentions):
        ours = attention(trace.q[layer], trace.k[layer], trace.v[layer], "causal").weights  # (2, n, n)
        np.testing.assert_allclose(ours, theirs[0].numpy(), atol=TOL, rtol=0, err_msg=f"layer {layer}")
        assert np.all(np.triu(ours, 1) == 0)  # causal by nature
    for i, h in enumerate(out.hidden_states):
        np.testing.assert_allclose(trace.hidden[i], h[0].numpy(), atol=TOL, rtol=0, err_msg=f"hidden {i}")


def test_tiny_gpt2_is_not_trivially_uniform(tiny_gpt2_dir: Path) -> None:
    """The comparison above means something only if the random weights give peaked attention."""
    handle = handle_for(tiny_gpt2_dir)
    enc = handle.encode(SENTENCES[0])
    trace = handle.model().forward(enc.ids)
    w = attention(trace.q[1], trace.k[1], trace.v[1], "causal").weights
    assert w[:, 5:, :].max() > 0.5
