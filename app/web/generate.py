"""The route of writing with a decoder.

POST /api/generate   {"model", "prompt", "max_new_tokens", "temperature", "top_k", "top_p", "seed",
                     "layer", "head", "chat", "ablate"} → one NDJSON line per new token, then {"done": true, …};
                     with Accept: application/json, the same as one object

Each step of the writing holds one compute slot (app.web.transport.SLOTS) only while it computes, so
other requests interleave with a long writing; a client that closes the stream stops the work
at the next step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator
from typing import Any

import anyio
import orjson
from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from app.model import ablate, generate, inside, prompt, registry
from app.model.families.base import NO_HOOKS
from app.model.generate import Done, Sampling, Written
from app.model.loader import handle_for
from app.model.tokenizer import Encoded
from app.schemas import GenerateRequest
from app.web.http import body_doc, error_docs, json_body, json_response
from app.web.transport import SLOTS, preferred

router = APIRouter(prefix="/api", tags=["decoder"])

NDJSON = "application/x-ndjson"


def _prompt_fields(model_id: str, encoded: Encoded) -> dict[str, Any]:
    return {"model": model_id, "prompt_tokens": encoded.tokens, "prompt_ids": encoded.ids}


@router.post(
    "/generate",
    summary="Write with the decoder, one token at a time",
    responses={
        200: {
            "content": {NDJSON: {}, "application/json": {}},
            "description": "NDJSON: one line per new token {index, token, id, text, candidates (top 10: token, id, "
            "p, logit, p_sample), attention (the chosen layer/head's weights of the query that chose it over the "
            "kv_len cached tokens), kv_len, layer, head, q, k, v}; the first line also has model, prompt_tokens, "
            "prompt_ids; the last is {done: true, reason: length|eos|stopped, seconds, written, cache_bytes}.",
        },
        **error_docs(413, 415, 422, 503),
    },
    openapi_extra=body_doc(GenerateRequest),
)
async def post_generate(request: Request) -> Response:
    req = await json_body(request, GenerateRequest)
    default_dir = request.app.state.model_dir
    entry = registry.entry(req.model or registry.DECODER_ID, default_dir)
    if req.model is None and registry.decoder_file() is None:
        entry = registry.entry(None, default_dir)
    handle = handle_for(entry.path)
    backend = request.app.state.backend
    model, encoded, layer = await anyio.to_thread.run_sync(
        prompt.prepare, handle, req.prompt, req.layer, req.head, req.chat, limiter=SLOTS
    )
    sampling = Sampling(req.temperature, req.top_k, req.top_p)
    off = inside.heads_off(model.spec, [(p[0], p[1]) for p in req.ablate], "ablate")
    hooks = ablate.switch_off(off) if off else NO_HOOKS
    steps = generate.write(
        model, encoded.ids, req.max_new_tokens, sampling, req.seed, layer, req.head, backend, hooks=hooks
    )
    header = _prompt_fields(entry.id, encoded)
    if preferred(request.headers.get("accept"), (NDJSON, "application/json")) == "application/json":
        return json_response(await anyio.to_thread.run_sync(_whole, steps, header, layer, req.head, limiter=SLOTS))
    return StreamingResponse(_lines(steps, header, layer, req.head), media_type=NDJSON)


def _whole(
    steps: Generator[Written | Done, None, None], header: dict[str, Any], layer: int, head: int
) -> dict[str, Any]:
    tokens: list[dict[str, Any]] = []
    for item in steps:
        if isinstance(item, Done):
            return {**header, "tokens": tokens, **generate.done_line(item)}
        tokens.append(generate.line(item, layer, head))
    raise RuntimeError("the writing ended without its last line")  # pragma: no cover


async def _lines(
    steps: Generator[Written | Done, None, None], header: dict[str, Any], layer: int, head: int
) -> AsyncIterator[bytes]:
    """Each step computed in a worker thread holding a compute slot, sent as soon as it is made."""
    try:
        first = True
        while True:
            item = await anyio.to_thread.run_sync(next, steps, None, limiter=SLOTS)
            if item is None:
                return
            if isinstance(item, Done):
                yield orjson.dumps(generate.done_line(item)) + b"\n"
                return
            out = generate.line(item, layer, head)
            if first:
                out = {**out, **header}
                first = False
            yield orjson.dumps(out) + b"\n"
    finally:
        steps.close()
