"""The prompt a decoder writes after: checked, wrapped in the chat template if asked, tokenized —
and the writing that follows it (begin()).

POST /api/generate and the notebook's write() both start here, so a prompt is refused with the same
message wherever it is typed (an InputError naming the field: a 422 on the web), and both write with
the same heads switched off.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from app import limits
from app.errors import InputError
from app.model import ablate, generate, inside, registry
from app.model.families.base import NO_HOOKS
from app.model.generate import Done, Sampling, Written
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


@dataclass
class Writing:
    """A writing about to start: the model, the prompt's tokens, the watched layer, and the steps (one
    generate.Written per token, then generate.Done), computed one at a time as they are asked for."""

    model: Model
    encoded: Encoded
    layer: int
    steps: Generator[Written | Done, None, None]

    def header(self, model_id: str) -> dict[str, Any]:
        """The answer's fields about the prompt (a stream's first line carries them too)."""
        return {"model": model_id, "prompt_tokens": self.encoded.tokens, "prompt_ids": self.encoded.ids}

    def whole(self, model_id: str, head: int) -> tuple[list[Written], Done, dict[str, Any]]:
        """Every step run: the tokens written, how it ended, and POST /api/generate's one-object answer
        (Accept: application/json) with head `head`'s weights."""
        written: list[Written] = []
        for item in self.steps:
            if isinstance(item, Done):
                lines = [generate.line(x, self.layer, head) for x in written]
                return written, item, {**self.header(model_id), "tokens": lines, **generate.done_line(item)}
            written.append(item)
        raise RuntimeError("the writing ended without its last line")  # pragma: no cover


def begin(
    handle: ModelHandle,
    text: str,
    layer: int | None,
    head: int,
    chat: bool,
    max_new_tokens: int,
    sampling: Sampling,
    seed: int | None,
    off: Sequence[Sequence[int]] = (),
    backend: str = "numpy",
) -> Writing:
    """The prompt prepared (prepare()), the heads `off` ([layer, head] pairs, field "ablate") checked
    and switched off, and the writing's steps, not yet run; an InputError names a bad field."""
    model, encoded, layer = prepare(handle, text, layer, head, chat)
    heads = inside.heads_off(model.spec, [(p[0], p[1]) for p in off], "ablate")
    hooks = ablate.switch_off(heads) if heads else NO_HOOKS
    steps = generate.write(model, encoded.ids, max_new_tokens, sampling, seed, layer, head, backend, hooks=hooks)
    return Writing(model, encoded, layer, steps)
