"""The route of writing with a decoder.

POST /api/generate   {"model", "prompt", "max_new_tokens", "temperature", "top_k", "top_p", "seed",
                     "layer", "head", "chat", "ablate"} → one NDJSON line per new token, then {"done": true, …};
                     with Accept: application/json, the same as one object

Each step of the writing holds one compute slot (app.web.transport.SLOTS) only while it computes, so
other requests interleave with a long writing; a client that closes the stream stops the work
at the next step.

A writing that comes out the same every time (greedy, or a fixed seed) is computed once and shared
(app.model.shared): a class's phones loading the text their teacher's page has just written get the
answer that page's stream left as it ended, or the one the first phone's request made, without
running the model again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

import anyio
import orjson
from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from app.model import generate, prompt, registry
from app.model.generate import Done, Sampling
from app.model.shared import SharedAnswers
from app.schemas import GenerateRequest
from app.web.http import JSON, body_doc, error_docs, json_body, json_bytes
from app.web.transport import SLOTS, preferred

router = APIRouter(prefix="/api", tags=["decoder"])

NDJSON = "application/x-ndjson"


def _shared(app: Any) -> SharedAnswers:
    """The app's written answers (app.state.written), made on first use."""
    found: SharedAnswers | None = getattr(app.state, "written", None)
    if found is None:
        found = app.state.written = SharedAnswers()
    return found


def _key(req: GenerateRequest) -> tuple[Any, ...] | None:
    """What makes a writing, less its model and length: None when it is not the same every time
    (sampled with no seed)."""
    if req.temperature > 0 and req.seed is None:
        return None
    off = tuple(sorted((p[0], p[1]) for p in req.ablate))  # heads switched off write another text
    return (req.prompt, req.chat, req.temperature, req.top_k, req.top_p, req.seed, req.layer, req.head, off)


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
    answers = _shared(request.app)
    whole = preferred(request.headers.get("accept"), (NDJSON, JSON)) == JSON
    req = await json_body(request, GenerateRequest)
    same = _key(req)  # a writing that comes out the same every time is shared: its key, less model and length
    entry, handle = registry.writer(req.model, request.app.state.model_dir)
    sampling = Sampling(req.temperature, req.top_k, req.top_p)
    begin = partial(prompt.begin, handle, req.prompt, req.layer, req.head, req.chat, req.max_new_tokens, sampling,
                    req.seed, req.ablate, request.app.state.backend)  # fmt: skip

    if whole:

        async def make() -> bytes:
            w = await anyio.to_thread.run_sync(begin, limiter=SLOTS)
            _, _, answer = await anyio.to_thread.run_sync(w.whole, entry.id, req.head, limiter=SLOTS)
            return json_bytes(answer)

        body = await (make() if same is None else answers.once((entry.id, *same, req.max_new_tokens), make))
        return Response(body, media_type=JSON)
    w = await anyio.to_thread.run_sync(begin, limiter=SLOTS)

    def keep(answer: dict[str, Any]) -> None:
        """The stream's whole answer, as the same request for the tokens it wrote would answer it."""
        if same is not None:
            answers.put((entry.id, *same, answer["written"]), json_bytes(answer))

    return StreamingResponse(_lines(w, entry.id, req.head, keep), media_type=NDJSON)


async def _lines(
    w: prompt.Writing, model_id: str, head: int, keep: Callable[[dict[str, Any]], None]
) -> AsyncIterator[bytes]:
    """Each step computed in a worker thread holding a compute slot, sent as soon as it is made; at the
    end keep(the whole answer), as a request for exactly the tokens written would have it (a writing
    stopped by a full cache then ends by "length")."""
    steps, layer, header = w.steps, w.layer, w.header(model_id)
    try:
        tokens: list[dict[str, Any]] = []
        while True:
            item = await anyio.to_thread.run_sync(next, steps, None, limiter=SLOTS)
            if item is None:
                return
            if isinstance(item, Done):
                done = generate.done_line(item)
                yield orjson.dumps(done) + b"\n"
                if tokens:
                    keep({**header, "tokens": tokens, **done, "reason": "eos" if item.reason == "eos" else "length"})
                return
            out = generate.line(item, layer, head)
            tokens.append(out)
            yield orjson.dumps({**out, **header} if len(tokens) == 1 else out) + b"\n"
    finally:
        steps.close()
