"""GGUF tokenizers as llama.cpp reads them (app.model.families.llama.tokenizer): tiny vocabularies
written into GGUF files by gguf's GGUFWriter, tokenized by our tokenizer.json, by transformers'
tokenizer of the same file (AutoTokenizer.from_pretrained(dir, gguf_file=…)) and, when
llama-cpp-python is installed, by llama.cpp itself."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from app.errors import ModelError
from app.model.families.llama.tokenizer import PRE_TOKENIZERS, tokenizer_json
from app.model.tokenizer import Encoded, TextTokenizer

CORPUS = [
    "The animal didn't cross the street because it was too tired.",
    "In 2024 we counted 1234 cats, 12 dogs, 20 owls and 2024 birds in 2020.",
    "def add(a, b):\n    return a + b\n",
    "She's here; they'll go. I'm sure it's fine! YOU'LL SEE.",
] * 20
TEXTS = [
    "In 2024 she's here, with 1234567 cats.",
    "The animal didn't cross the street because it was too tired.",
    "def add(a, b):\n\n    return a + b\n",
    "  two spaces, then\ttabs and YOU'LL SEE",
    "Café naïve — déjà vu! 🙂",
    "<s>a special token<|endoftext|> in the text",
]
EOS, BOS, USER = "<|endoftext|>", "<s>", "<think>"


@pytest.fixture(scope="module")
def vocabulary() -> tuple[list[str], list[str]]:
    """A byte-level BPE vocabulary trained on CORPUS (GPT-2's split): its tokens, by id, and merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=420, initial_alphabet=alphabet,
                                                        special_tokens=[EOS, BOS, USER]))  # fmt: skip
    model = json.loads(tok.to_str())["model"]
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    assert "20" in tokens and "24" in tokens  # digits merged: the split decides whether they are used
    return tokens, merges


def write(where: Path, vocabulary: tuple[list[str], list[str]], pre: str | None, **flags: bool) -> Path:
    """A GGUF file holding only a Llama header and the tokenizer (pre-tokenizer type `pre`, BOS id 1,
    EOS id 0, <think> user-defined; add_bos=… / add_eos=… written when given)."""
    import gguf

    tokens, merges = vocabulary
    path = where / f"{pre}-{'-'.join(f'{k}{int(v)}' for k, v in flags.items())}.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(8)
    w.add_feed_forward_length(8)
    w.add_head_count(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    if pre is not None:
        w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types([3 if t in (EOS, BOS) else 4 if t == USER else 1 for t in tokens])
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index(BOS))
    w.add_eos_token_id(tokens.index(EOS))
    if "add_bos" in flags:
        w.add_add_bos_token(flags["add_bos"])
    if "add_eos" in flags:
        w.add_add_eos_token(flags["add_eos"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def ours(path: Path) -> TextTokenizer:
    """Our tokenizer of the file, as a converted folder holds it (tokenizer.json), through the app's reader."""
    import gguf

    reader = gguf.GGUFReader(str(path))

    def field(key: str) -> Any:
        f = reader.fields.get(key)
        return None if f is None else f.contents()

    out = path.with_suffix(".tokenizer.json")
    out.write_text(tokenizer_json(field, str(path)), encoding="utf-8")
    return TextTokenizer(out)


def theirs(path: Path) -> Any:
    transformers = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


@pytest.mark.parametrize("pre", ["gpt-2", "llama-bpe"])
@pytest.mark.parametrize("add_bos", [True, False])
def test_ids_are_transformers_ids(
    tmp_path: Path, vocabulary: tuple[list[str], list[str]], pre: str, add_bos: bool
) -> None:
    path = write(tmp_path, vocabulary, pre, add_bos=add_bos)
    mine, reference = ours(path), theirs(path)
    for text in TEXTS:
        assert mine.encode(text).ids == reference(text)["input_ids"], text
    first = mine.encode(TEXTS[0])
    assert (first.ids[0] == 1) == add_bos and (first.words[0] is None) == add_bos  # BOS: a special token


def test_the_splits_differ_where_llama_cpp_says(tmp_path: Path, vocabulary: tuple[list[str], list[str]]) -> None:
    """The same vocabulary under four pre-tokenizer types: GPT-2 keeps "2024" one piece (merged to
    "20", "24"), Llama 3 splits numbers into runs of up to three digits, SmolLM2's type every digit,
    and llama.cpp's "default" cuts punctuation off first ("didn" "'" "t")."""

    def tokens(pre: str, text: str) -> list[str]:
        return ours(write(tmp_path, vocabulary, pre, add_bos=False)).encode(text).tokens

    numbers = " 2024 1234567"
    gpt2, smollm, llama3 = (tokens(pre, numbers) for pre in ("gpt-2", "smollm", "llama-bpe"))
    assert "".join(gpt2) == "".join(smollm) == "".join(llama3) == numbers
    assert any(len(t.strip()) > 1 and t.strip().isdigit() for t in gpt2)  # merged digits
    assert all(len(t.strip()) == 1 for t in smollm if t.strip().isdigit())  # one digit a token
    ends = {sum(len(t) for t in llama3[: i + 1]) for i in range(len(llama3))}
    assert {9, 12} <= ends and max(len(t.strip()) for t in llama3) <= 3  # "123" "456" "7": no token across
    assert "'t" in tokens("gpt-2", "didn't") and "'" in tokens("default", "didn't")
    assert tokens("smollm", TEXTS[1]) == tokens("gpt-2", TEXTS[1])  # no digits: SmolLM2's split is GPT-2's


def test_smollm_agrees_with_transformers_where_there_are_no_digits(
    tmp_path: Path, vocabulary: tuple[list[str], list[str]]
) -> None:
    """transformers reads "smollm" with GPT-2's split (digits not apart), llama.cpp splits every digit
    first: on text without digits the two are the same split."""
    path = write(tmp_path, vocabulary, "smollm", add_bos=False)
    mine, reference = ours(path), theirs(path)
    for text in (t for t in TEXTS if not any(c.isdigit() for c in t)):
        assert mine.encode(text).ids == reference(text)["input_ids"], text


def test_bos_and_eos_as_llama_cpp_adds_them(tmp_path: Path, vocabulary: tuple[list[str], list[str]]) -> None:
    """Without add_bos_token in the file, llama.cpp starts a text with BOS for the Llama 3 types only;
    add_eos_token ends it with EOS. The added tokens are special: no word, no characters."""
    bos, eos = 1, 0

    def encoded(pre: str | None, **flags: bool) -> Encoded:
        return ours(write(tmp_path, vocabulary, pre, **flags)).encode("a cat")

    assert encoded("llama-bpe").ids[0] == bos and encoded("gpt-2").ids[0] != bos
    both = encoded("gpt-2", add_bos=True, add_eos=True)
    assert both.ids[0] == bos and both.ids[-1] == eos and both.words[0] is None and both.words[-1] is None
    assert both.spans[0] is None and both.spans[-1] is None and both.content == len(both) - 2
    assert encoded(None).ids == encoded("default").ids  # no type in the file: llama.cpp's default


def test_control_and_user_defined_tokens_stay_whole(tmp_path: Path, vocabulary: tuple[list[str], list[str]]) -> None:
    path = write(tmp_path, vocabulary, "gpt-2", add_bos=False)
    text = f"a{USER}b {BOS}c"
    enc = ours(path).encode(text)
    assert USER in enc.tokens and BOS in enc.tokens
    assert enc.ids == theirs(path)(text)["input_ids"]


def test_an_unknown_pre_tokenizer_is_refused_by_name(tmp_path: Path, vocabulary: tuple[list[str], list[str]]) -> None:
    with pytest.raises(ModelError, match=r"tokenizer\.ggml\.pre 'qwen2' is a pre-tokenizer this server does not read"):
        ours(write(tmp_path, vocabulary, "qwen2"))
    with pytest.raises(ModelError, match="smollm"):  # the message lists what is read
        ours(write(tmp_path, vocabulary, "gpt2"))  # llama.cpp spells GPT-2's type "gpt-2"
    assert "gpt-2" in PRE_TOKENIZERS and "gpt2" not in PRE_TOKENIZERS


def _llama_cpp() -> Any:
    return pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (an optional reference)")


@pytest.mark.parametrize("pre", ["gpt-2", "llama-bpe", "smollm", "default"])
def test_ids_are_llama_cpps(tmp_path: Path, vocabulary: tuple[list[str], list[str]], pre: str) -> None:
    llama_cpp = _llama_cpp()
    path = write(tmp_path, vocabulary, pre)  # no add_bos_token: each type's own default
    reference = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    mine = ours(path)
    for text in TEXTS:
        assert mine.encode(text).ids == reference.tokenize(text.encode(), add_bos=True, special=True), text
