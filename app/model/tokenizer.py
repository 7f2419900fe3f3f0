"""Sentences to token ids with the model's own tokenizer.json (the `tokenizers` library).

Tokens are shown as the model sees them: BERT's [CLS], word pieces with ## and [SEP];
GPT-2's byte-level pieces decoded to text (a leading space marks the start of a word), where a
piece holds only part of a multi-byte character ("🍕" is 4 bytes, often 2 or 3 pieces) its
loose bytes are shown as the bytes they are, "<0xF0><0x9F>", as tokenizer viewers do.
Each token also gets its word index (None for special tokens), so a view can merge the
pieces of a word, and its character span in the sentence (None for special tokens).
The file's own padding and truncation settings are switched off: the API counts tokens.
"""

from __future__ import annotations

import codecs
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tokenizers import Tokenizer, decoders

from app.errors import ModelError


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


def _hex_bytes(e: UnicodeError) -> tuple[str, int]:
    """A codecs error handler: bytes that are not whole UTF-8 characters as <0xXX> each."""
    if not isinstance(e, UnicodeDecodeError):
        raise e
    return "".join(f"<0x{b:02X}>" for b in e.object[e.start : e.end]), e.end


codecs.register_error("attention3d-hex-bytes", _hex_bytes)


@cache
def _byte_of() -> dict[str, int]:
    """GPT-2's byte-level alphabet back to bytes: the printable bytes stand for themselves, the
    others for chr(256 + i) in order (Radford et al. 2019, encoder.py bytes_to_unicode)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    out = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            out[chr(256 + extra)] = b
            extra += 1
    return out


def byte_level_text(piece: str) -> str:
    """A byte-level piece as text; bytes that do not make whole characters shown as <0xXX>."""
    table = _byte_of()
    if not all(c in table for c in piece):  # an added token such as <|endoftext|> is its own text
        return piece
    return bytes(table[c] for c in piece).decode("utf-8", errors="attention3d-hex-bytes")


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

    def piece(self, token_id: int) -> str:
        """One token id as encode() shows its token (byte-level pieces as text, loose bytes as <0xXX>)."""
        piece = self._tok.id_to_token(token_id) or ""
        return byte_level_text(piece) if self._byte_level else piece

    def decode(self, ids: list[int]) -> str:
        """The text of a run of token ids (special tokens kept), as the model's own decoder makes it."""
        return str(self._tok.decode(ids, skip_special_tokens=False))

    def encode(self, sentence: str) -> Encoded:
        enc = self._tok.encode(sentence)
        ids = list(enc.ids)
        special = [bool(s) for s in enc.special_tokens_mask]
        tokens = [byte_level_text(t) for t in enc.tokens] if self._byte_level else list(enc.tokens)
        words = [None if s else w for w, s in zip(enc.word_ids, special, strict=True)]
        spans: list[tuple[int, int] | None] = [
            None if s else (int(a), int(b)) for (a, b), s in zip(enc.offsets, special, strict=True)
        ]
        return Encoded(ids, tokens, words, spans)


_loaded: dict[tuple[str, int, int], TextTokenizer] = {}
_loaded_lock = threading.Lock()


def load_tokenizer(path: Path) -> TextTokenizer:
    """The tokenizer of `path`, read once per version of the file: checking a model folder at start
    (app.model.spec) and loading the model (app.model.loader) share it. A large BPE vocabulary takes
    a few tenths of a second to read (SmolLM2's 49,152 tokens and 48,900 merges)."""
    try:
        st = path.stat()
    except OSError:
        return TextTokenizer(path)  # its ModelError names the file
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _loaded_lock:
        if key not in _loaded:
            _loaded[key] = TextTokenizer(path)
        return _loaded[key]
