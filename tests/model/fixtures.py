"""The model fixtures: the default model, transformers' reference, a tiny random GPT-2 (and, from
llama_fixtures, the decoder's). A plugin of the whole suite (tests/conftest.py's pytest_plugins), so
each is made once per session, whichever folder's tests ask for it first: import the constants
from here, never a fixture (an imported fixture is a second one, loaded again)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.model import blas
from app.model.loader import ModelHandle, handle_for

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # transformers only ever reads local directories here
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "Café naïve — it's déjà vu!",  # accents (stripped by the uncased tokenizer) and punctuation
    "Tokenization of antidisestablishmentarianism: unbelievably, 3.14159 (pi) isn't rational?!",  # ##pieces
    "a",
]
# A small corpus for the tiny GPT-2's byte-level BPE tokenizer.
CORPUS = [
    "The animal didn't cross the street because it was too tired.",
    "The quick brown fox jumps over the lazy dog, again and again.",
    "Attention is all you need; attention weights sum to one.",
    "Café naïve — déjà vu! Über straße, ünïcödé.",
] * 20


@pytest.fixture(scope="session")
def minilm() -> ModelHandle:
    h = handle_for(None)
    h.model()
    return h


@pytest.fixture(scope="session")
def hf_minilm(minilm: ModelHandle) -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.AutoModel.from_pretrained(str(minilm.spec().path), attn_implementation="eager").eval()


@pytest.fixture(scope="session")
def tiny_gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer, 2-head GPT-2 with random weights and its own byte-level BPE tokenizer, saved offline."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    d = tmp_path_factory.mktemp("tiny-gpt2")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<|endoftext|>"]
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.save(str(d / "tokenizer.json"))
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=16, n_positions=128, vocab_size=tok.get_vocab_size(), initializer_range=0.3
    )
    torch.manual_seed(0)
    transformers.GPT2Model(config).save_pretrained(d)
    return d


@pytest.fixture(scope="session")
def hf_gpt2(tiny_gpt2_dir: Path) -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.AutoModel.from_pretrained(str(tiny_gpt2_dir), attn_implementation="eager").eval()


@pytest.fixture(scope="session")
def api() -> TestClient:
    return TestClient(create_app(backend="numpy"))


@pytest.fixture(scope="session")
def gpt2_api(tiny_gpt2_dir: Path) -> TestClient:
    return TestClient(create_app(backend="numpy", model=str(tiny_gpt2_dir)))


@pytest.fixture(scope="module", params=["mkl", "numpy"])
def each_blas(request: pytest.FixtureRequest) -> Iterator[str]:
    """A module's tests twice: with MKL's products (the mkl extra, which the tests' extras install)
    and with NumPy's own BLAS (what a plain install multiplies with)."""
    if request.param == "mkl" and not blas.available():
        pytest.skip("the mkl extra is not installed: NumPy's BLAS alone")
    with blas.using(request.param):
        yield request.param
