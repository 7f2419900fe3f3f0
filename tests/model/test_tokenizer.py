"""GPT-2's byte-level pieces: a piece that holds part of a multi-byte character shows its bytes."""

from __future__ import annotations

import re
from pathlib import Path

from app.model.tokenizer import TextTokenizer, byte_level_text


def as_bytes(token: str) -> bytes:
    """The bytes a shown token stands for: <0xXX> is one byte, the rest is UTF-8 text."""
    return b"".join(
        bytes([int(part[3:5], 16)]) if re.fullmatch(r"<0x[0-9A-F]{2}>", part) else part.encode()
        for part in re.split(r"(<0x[0-9A-F]{2}>)", token)
        if part
    )


def test_byte_level_text() -> None:
    assert byte_level_text("Ġcat") == " cat"
    assert byte_level_text("ðŁ") == "<0xF0><0x9F>"  # the first two bytes of 🍕 (F0 9F 8D 95)
    assert byte_level_text("Ġð") == " <0xF0>"
    assert byte_level_text("Ã©") == "é"  # a whole character stays a character
    assert byte_level_text("<|endoftext|>") == "<|endoftext|>"


def test_emoji_pieces_show_their_bytes(tiny_gpt2_dir: Path) -> None:
    sentence = "I like 🍕 and déjà vu"
    enc = TextTokenizer(tiny_gpt2_dir / "tokenizer.json").encode(sentence)
    assert "\ufffd" not in "".join(enc.tokens)
    assert any(t.startswith(" <0xF0>") or t == "<0xF0>" for t in enc.tokens), enc.tokens
    assert b"".join(as_bytes(t) for t in enc.tokens) == sentence.encode()  # nothing lost, nothing added
    for token, span in zip(enc.tokens, enc.spans, strict=True):
        if span is not None and "<0x" not in token:
            assert sentence[span[0] : span[1]] == token.lstrip() or sentence[span[0] : span[1]] == token
