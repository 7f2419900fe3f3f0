"""SmolLM2-135M in NumPy against transformers' own LlamaForCausalLM from the same GGUF file.

transformers dequantizes the file itself and runs eager attention in float32: every layer's
weights agree within TOL, q and k after RoPE and v within 1e-4 of transformers' own modules, the
greedy ids are the ones transformers' generate() writes, and the KV cache gives what a full
forward pass gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from app.attention import attention
from app.model import generate
from app.model.loader import Model
from app.model.select import layer_heads
from tests.model.llama_fixtures import PROMPTS

TOL = 1e-5  # the bound docs/decoder.md gives for attention weights; measured ≤ 4e-6
GREEDY_TOKENS = 8
pytestmark = pytest.mark.usefixtures("each_blas")  # every test with MKL's products and with NumPy's BLAS


@pytest.fixture(scope="module")
def hf_runs(smollm: Model, hf_smollm: Any) -> dict[str, Any]:
    """transformers' forward pass (attentions, hidden states, logits) of each prompt, run once."""
    import torch

    out = {}
    with torch.no_grad():
        for prompt in PROMPTS:
            ids = smollm.tokenizer.encode(prompt).ids
            out[prompt] = hf_smollm(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    return out


@pytest.mark.parametrize("prompt", PROMPTS)
def test_weights_every_layer_and_head(smollm: Model, hf_runs: dict[str, Any], prompt: str) -> None:
    ids = smollm.tokenizer.encode(prompt).ids
    trace = smollm.forward(ids)
    theirs = hf_runs[prompt].attentions
    assert len(theirs) == trace.layers == 30
    assert trace.q[0].shape == (9, len(ids), 64) and trace.k[0].shape == (3, len(ids), 64)  # 3 KV heads
    for layer in range(30):
        ours = attention(*layer_heads(trace, layer), "causal").weights  # (9, n, n): every head, each KV group
        np.testing.assert_allclose(ours, theirs[layer][0].numpy(), atol=TOL, rtol=0, err_msg=f"layer {layer}")
        assert np.all(np.triu(ours, 1) == 0)  # causal by nature


def test_q_k_after_rope_and_v(smollm: Model, hf_smollm: Any, hf_runs: dict[str, Any]) -> None:
    """Layer by layer from transformers' own hidden states, through its own modules and apply_rotary_pos_emb."""
    import torch
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    prompt = PROMPTS[1]
    ids = smollm.tokenizer.encode(prompt).ids
    n = len(ids)
    trace = smollm.forward(ids)
    hidden = hf_runs[prompt].hidden_states
    positions = torch.arange(n)[None]
    for layer in (0, 14, 29):
        block = hf_smollm.model.layers[layer]
        with torch.no_grad():
            h = block.input_layernorm(hidden[layer])
            q = block.self_attn.q_proj(h).view(1, n, 9, 64).transpose(1, 2)
            k = block.self_attn.k_proj(h).view(1, n, 3, 64).transpose(1, 2)
            v = block.self_attn.v_proj(h).view(1, n, 3, 64).transpose(1, 2)
            cos, sin = hf_smollm.model.rotary_emb(h, positions)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
        for name, ours, ref in (("q", trace.q, q), ("k", trace.k, k), ("v", trace.v, v)):
            np.testing.assert_allclose(ours[layer], ref[0].numpy(), atol=1e-4, rtol=1e-4, err_msg=f"{name} {layer}")


def test_last_hidden_state_and_logits(smollm: Model, hf_runs: dict[str, Any]) -> None:
    prompt = PROMPTS[0]
    ids = smollm.tokenizer.encode(prompt).ids
    trace = smollm.forward(ids)
    out = hf_runs[prompt]
    np.testing.assert_allclose(trace.hidden[-1], out.hidden_states[-1][0].numpy(), atol=2e-3, rtol=1e-4)
    cache = generate.new_cache(smollm, len(ids))
    logits, _ = generate.advance(smollm, ids, cache, 0, 0)
    np.testing.assert_allclose(logits, out.logits[0, -1].numpy(), atol=2e-3, rtol=1e-4)


@pytest.mark.parametrize("prompt", ["The capital of France is", PROMPTS[1], PROMPTS[2]])
def test_greedy_ids_are_transformers_generate(smollm: Model, hf_smollm: Any, prompt: str) -> None:
    import torch

    ids = smollm.tokenizer.encode(prompt).ids
    steps = list(generate.write(smollm, ids, GREEDY_TOKENS, generate.Sampling(), None, 0, 0))
    with torch.no_grad():
        theirs = hf_smollm.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            max_new_tokens=GREEDY_TOKENS, do_sample=False, pad_token_id=2,
        )[0, len(ids) :].tolist()  # fmt: skip
    done = steps[-1]
    assert isinstance(done, generate.Done)
    assert done.ids == theirs
    if prompt.startswith("The capital"):
        assert done.ids[0] == smollm.tokenizer.encode(" Paris").ids[0]


def test_kv_cache_step_by_step_is_the_full_forward(smollm: Model) -> None:
    """Feeding the tokens one at a time through the cache gives each token's keys, values and weights
    as the whole sentence's forward pass does (the cache changes the cost, not the numbers)."""
    ids = smollm.tokenizer.encode(PROMPTS[0]).ids
    trace = smollm.forward(ids)
    cache = generate.new_cache(smollm, len(ids))
    layer, head = 5, 7
    for t, token in enumerate(ids):
        _, watched = generate.advance(smollm, [token], cache, layer, head)
        full = attention(*layer_heads(trace, layer), "causal").weights[head, t, : t + 1]
        np.testing.assert_allclose(watched.weights, full, atol=1e-5, rtol=0)
    for layer in (0, 29):
        np.testing.assert_allclose(cache.k[layer], trace.k[layer], atol=1e-4, rtol=1e-4)
        np.testing.assert_allclose(cache.v[layer], trace.v[layer], atol=1e-4, rtol=1e-4)


def test_the_attention_sink(smollm: Model) -> None:
    """Most of the weight, over every layer and head, lands on the first token (measured 0.66)."""
    trace = smollm.forward(smollm.tokenizer.encode(PROMPTS[0]).ids)
    on_first = [attention(*layer_heads(trace, i), "causal").weights[:, 1:, 0].mean() for i in range(30)]
    assert 0.5 < float(np.mean(on_first)) < 0.8


# ids of transformers 5.24's tokenizer for the same GGUF file (AutoTokenizer.from_pretrained(dir, gguf_file=…)),
# recorded once: building it reads the file's 49,152 tokens in Python for ~5 s
TRANSFORMERS_IDS = {
    "The capital of France is": [504, 3575, 282, 4649, 314],
    PROMPTS[1]: [7026, 11743, 253, 22001, 2756, 4132, 844, 30165, 1280, 319, 613, 23, 301, 1113, 2889, 275, 2170, 30,
                 17097, 247, 126, 16736, 122, 7365, 124, 23274, 115, 40993, 26453, 180, 116, 240, 180, 38466, 7365,
                 117, 39958, 19076],
    PROMPTS[2]: [1604, 3987, 24, 94, 727, 472, 1003, 304, 585, 304, 2067, 216, 34, 1745, 3987, 24, 94, 731, 216, 33,
                 25, 1232, 3987, 24, 94, 731, 216, 34, 25, 198],
}  # fmt: skip


@pytest.mark.parametrize("text", list(TRANSFORMERS_IDS))
def test_tokenizer_agrees_with_transformers(smollm: Model, text: str) -> None:
    assert smollm.tokenizer.encode(text).ids == TRANSFORMERS_IDS[text]


def test_tokenizer_agrees_with_llama_cpp(smollm: Model) -> None:
    """llama.cpp's own tokenizer of the same GGUF file (llama-cpp-python, an optional reference)."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (an optional reference)")
    from app.model import registry

    reference = llama_cpp.Llama(model_path=str(registry.decoder_file()), vocab_only=True, verbose=False)
    for text in [*TRANSFORMERS_IDS, "In 2024, 1234567 cats ate 3.5 fish.", "<|im_start|>user\nHi<|im_end|>"]:
        assert smollm.tokenizer.encode(text).ids == reference.tokenize(text.encode(), add_bos=True, special=True)


def test_tokenizer_splits_digits_and_keeps_special_tokens(smollm: Model) -> None:
    # SmolLM2's own tokenizer (and llama.cpp's "smollm" pre-tokenizer) reads digits one at a time
    assert smollm.tokenizer.encode("2024").tokens == ["2", "0", "2", "4"]
    enc = smollm.tokenizer.encode("<|im_start|>user\nHi<|im_end|>")
    assert enc.ids[0] == 1 and enc.ids[-1] == 2 and enc.tokens[0] == "<|im_start|>"  # special tokens stay whole


def test_sampling_with_a_seed_is_repeatable(smollm: Model) -> None:
    ids = smollm.tokenizer.encode("Once upon a time").ids
    s = generate.Sampling(temperature=1.2, top_k=40, top_p=0.95)

    def run(seed: int) -> list[int]:
        done = list(generate.write(smollm, ids, 6, s, seed, 0, 0))[-1]
        assert isinstance(done, generate.Done)
        return done.ids

    assert run(7) == run(7)
    assert len({tuple(run(seed)) for seed in (1, 2, 3)}) > 1
