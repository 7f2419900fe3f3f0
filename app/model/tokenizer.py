"""Sentences to token ids with the model's own tokenizer.json (the `tokenizers` library).

Tokens are shown as the model sees them: BERT's [CLS], word pieces with ## and [SEP];
GPT-2's byte-level pieces decoded to text (a leading space marks the start of a word).
Each token also gets its word index (None for special tokens), so a view can merge the
pieces of a word, and its character span in the sentence (None for special tokens).
The file's own padding and truncation settings are switched off: the API counts tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer, decoders

from app.model.spec import ModelError


@dataclass(frozen=True)
class Encoded:
    ids: list[int]
    tokens: list[str]
    words: list[int | None]  # word index of each token; None for [CLS], [SEP] and the like
    spans: list[tuple[int, int] | None]  # [start, end) characters of the sentence; None for specials

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def content(self) -> int:
        """How many tokens are not special tokens."""
        return sum(w is not None for w in self.words)


class TextTokenizer:
    def __init__(self, path: Path) -> None:
        try:
            self._tok = Tokenizer.from_file(str(path))
        except Exception as e:  # tokenizers raises a plain Exception for a file it cannot read
            raise ModelError(f"{path} cannot be read as a tokenizer: {e}") from None
        self._tok.no_padding()
        self._tok.no_truncation()
        self._byte_level = isinstance(self._tok.decoder, decoders.ByteLevel)

    @property
    def vocab_size(self) -> int:
        """The largest token id + 1, added tokens included."""
        return int(self._tok.get_vocab_size(with_added_tokens=True))

    def encode(self, sentence: str) -> Encoded:
        enc = self._tok.encode(sentence)
        ids = list(enc.ids)
        special = [bool(s) for s in enc.special_tokens_mask]
        if self._byte_level:
            tokens = [self._tok.decode([i], skip_special_tokens=False) for i in ids]
        else:
            tokens = list(enc.tokens)
        words = [None if s else w for w, s in zip(enc.word_ids, special, strict=True)]
        spans: list[tuple[int, int] | None] = [
            None if s else (int(a), int(b)) for (a, b), s in zip(enc.offsets, special, strict=True)
        ]
        return Encoded(ids, tokens, words, spans)
