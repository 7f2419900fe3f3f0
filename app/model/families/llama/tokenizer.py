"""A GGUF file's tokenizer as llama.cpp reads it, written as a tokenizer.json (the `tokenizers` library).

References:
  llama.cpp, src/llama-vocab.cpp: llama_vocab::impl::load (tokenizer.ggml.pre names a
  pre-tokenizer type, which sets whether a BOS token starts every text; tokenizer.ggml.add_bos_token
  and add_eos_token, when the file has them, decide instead) and llm_tokenizer_bpe (each type's
  regular expressions, applied one after the other to the pieces the previous one left; the
  matches and the text between them both become pieces). Token types: 3 (control) are special
  tokens, kept whole; 4 (user-defined) are always kept whole.
  transformers/integrations/gguf/gguf_tokenizer_mapping.py reads the same file (the tests'
  reference): GPT-2's byte-level BPE, with the llama3 split for "llama-bpe" and its kin.

Only byte-level BPE vocabularies (tokenizer.ggml.model "gpt2") and the pre-tokenizer types below
are read; any other is refused with a message that names it and the ones this server reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.errors import ModelError

# GPT-2's split (Radford et al. 2019, encoder.py): contractions, letters, digits, other marks, spaces
GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
# Llama 3's (its tokenizer.json): any-case contractions, numbers of up to three digits, newlines apart
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)


@dataclass(frozen=True)
class PreTokenizer:
    """A llama.cpp pre-tokenizer type: its regular expressions in order, whether it starts a text
    with BOS unless the file says otherwise, and whether a piece that is a whole token is taken
    as it is before any merge (llama.cpp's ignore_merges)."""

    splits: tuple[str, ...]
    add_bos: bool = False
    ignore_merges: bool = False


_LLAMA3 = PreTokenizer((LLAMA3_SPLIT,), add_bos=True, ignore_merges=True)
_GPT2 = PreTokenizer((GPT2_SPLIT,))
_DIGITS = PreTokenizer((r"\p{N}", GPT2_SPLIT))  # each digit its own piece first (SmolLM2, StarCoder)
PRE_TOKENIZERS = {
    "default": PreTokenizer((r"[\p{P}\$\+<=>\^~\|]+", GPT2_SPLIT, r"\p{N}+", r"[0-9][0-9][0-9]")),
    "llama3": _LLAMA3,
    "llama-v3": _LLAMA3,
    "llama-bpe": _LLAMA3,
    "falcon3": _LLAMA3,
    "gpt-2": _GPT2,
    "phi-2": _GPT2,
    "roberta-bpe": _GPT2,
    "mpt": _GPT2,
    "olmo": _GPT2,
    "smollm": _DIGITS,
    "starcoder": _DIGITS,
    "refact": _DIGITS,
    "codeshell": _DIGITS,
}
CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values (llama.cpp's LLAMA_TOKEN_TYPE_…)


def pre_tokenizer(name: str | None, where: str) -> PreTokenizer:
    """The type tokenizer.ggml.pre names (missing: llama.cpp's "default"), or a ModelError."""
    if name is None:
        return PRE_TOKENIZERS["default"]
    if name not in PRE_TOKENIZERS:
        raise ModelError(
            f"{where}: tokenizer.ggml.pre {name!r} is a pre-tokenizer this server does not read "
            f"(it reads {', '.join(sorted(PRE_TOKENIZERS))})"
        )
    return PRE_TOKENIZERS[name]


def tokenizer_json(field: Callable[[str], Any], where: str) -> str:
    """The tokenizer of a GGUF file's tokenizer.ggml.* fields (field(key): its value, None when
    missing) as a tokenizer.json: byte-level BPE with the file's vocabulary and merges, its
    pre-tokenizer type's splits, its special tokens kept whole and BOS/EOS added as llama.cpp adds them."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    if field("tokenizer.ggml.model") != "gpt2" or field("tokenizer.ggml.tokens") is None:
        raise ModelError(f"{where}: only a byte-level BPE tokenizer (tokenizer.ggml.model 'gpt2') is supported")
    pre = pre_tokenizer(field("tokenizer.ggml.pre"), where)
    tokens = [str(t) for t in field("tokenizer.ggml.tokens")]
    merges = [tuple(str(m).split(" ", 1)) for m in field("tokenizer.ggml.merges") or []]
    types = list(field("tokenizer.ggml.token_type") or [1] * len(tokens))
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges, ignore_merges=pre.ignore_merges))  # type: ignore[arg-type]
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in pre.splits]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(
        [
            AddedToken(t, special=True, normalized=False)
            for t, kind in zip(tokens, types, strict=True)
            if kind == CONTROL
        ]
    )
    tok.add_tokens(
        [AddedToken(t, special=False, normalized=False) for t, kind in zip(tokens, types, strict=True)
         if kind == USER_DEFINED]
    )  # fmt: skip
    template, specials = "$A", []
    for key, default, before in (("bos", pre.add_bos, True), ("eos", False, False)):
        add = field(f"tokenizer.ggml.add_{key}_token")
        if not (default if add is None else bool(add)):
            continue
        token_id = field(f"tokenizer.ggml.{key}_token_id")
        if token_id is None or not 0 <= int(token_id) < len(tokens):
            raise ModelError(f"{where}: every text starts with {key.upper()}, but tokenizer.ggml.{key}_token_id "
                             "is missing or not a token of the vocabulary")  # fmt: skip
        text = tokens[int(token_id)]
        specials.append((text, int(token_id)))
        template = f"{text} {template}" if before else f"{template} {text}"
    byte_level = processors.ByteLevel(trim_offsets=False)
    tok.post_processor = (
        processors.Sequence([byte_level, processors.TemplateProcessing(single=template, special_tokens=specials)])
        if specials
        else byte_level
    )
    return str(tok.to_str())
