"""The prompt a decoder writes after: checked, wrapped in the chat template if asked, tokenized.

POST /api/generate and the notebook's write() both start here, so a prompt is refused with the same
message wherever it is typed (an InputError naming the field: a 422 on the web).
"""

from __future__ import annotations

from app import limits
from app.errors import InputError
from app.model import generate, registry
from app.model.loader import Model, ModelHandle
from app.model.tokenizer import Encoded


def prepare(handle: ModelHandle, prompt: str, layer: int | None, head: int, chat: bool) -> tuple[Model, Encoded, int]:
    """The loaded model, the prompt's tokens and the watched layer (None: the last), or an InputError.

    Loading the weights may raise ModelError (a 503 on the web).
    """
    model = handle.model()
    s = model.spec
    if s.kind != "llama":
        raise InputError(
            "model", f"{s.name} is a {s.kind.upper()} model and cannot write here: use {registry.DECODER_ID!r}"
        )
    layer = s.layers - 1 if layer is None else layer
    if layer >= s.layers:
        raise InputError("layer", f"layer must be 0 … {s.layers - 1} ({s.name} has {s.layers} layers)")
    if head >= s.heads:
        raise InputError("head", f"head must be 0 … {s.heads - 1} ({s.name} has {s.heads} query heads)")
    if not prompt.strip():
        raise InputError("prompt", "prompt is empty: type at least one word", "empty_text")
    text = prompt
    if chat:
        try:
            text = generate.chat_prompt(model, prompt)
        except ValueError as e:
            raise InputError("chat", str(e)) from None
    encoded = model.tokenizer.encode(text)
    limit = min(limits.MAX_PROMPT_TOKENS, s.max_positions - 1)
    if len(encoded) > limit:
        raise InputError(
            "prompt",
            f"prompt is {len(encoded)} tokens for {s.name}; the limit is {limit} tokens: shorten it",
            "too_many_tokens",
            ctx={"tokens": len(encoded), "limit": limit},
        )
    if len(encoded) == 0:
        raise InputError("prompt", f"prompt has no tokens that {s.name} reads", "no_tokens")
    return model, encoded, layer
