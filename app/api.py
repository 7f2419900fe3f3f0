"""The HTTP API: thin routes from requests to app.attention and back."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import anyio
import numpy as np
import orjson
from fastapi import APIRouter, Request, Response
from pydantic import ValidationError

from app import frame, limits
from app.attention import STAGES, Backend, Stages, attention, stages
from app.errors import ClientError
from app.examples import EXAMPLES, Example
from app.model import service as model_service
from app.schemas import (
    AttentionInput,
    AttentionRequest,
    AttentionResponse,
    ErrorResponse,
    ExampleOut,
    InputError,
    checked,
)
from app.transport import (
    Answer,
    Body,
    Start,
    body_error,
    in_slot,
    is_json,
    media_type,
    read_body,
    stream_in_slot,
)

router = APIRouter(prefix="/api", tags=["attention"])
_INLINE_BODY_BYTES = 64 * 1024  # bodies up to this size are parsed on the event loop
_INLINE_CELLS = 4096  # below this many cells a request is computed on the event loop: a thread hop costs more
_SAFE_V = 1e308  # |v| below this cannot make weights·v overflow, so a frame may stream before output exists

_ATTENTION_BODY = {
    "required": True,
    "content": {
        "application/json": {"schema": AttentionRequest.model_json_schema()},
        frame.FRAME_MEDIA_TYPE: {
            "schema": {"type": "string", "format": "binary"},
            "description": "A binary frame (see README) with arrays q, k, v and the other fields in its header.",
        },
    },
}
_ATTENTION_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": f"Every stage. With `Accept: {frame.FRAME_MEDIA_TYPE}` the same fields come as a binary frame.",
        "content": {frame.FRAME_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}},
    },
    413: {"model": ErrorResponse, "description": f"Body over {limits.MAX_BODY_BYTES:,} bytes."},
    415: {"model": ErrorResponse, "description": "Body neither JSON nor a frame."},
    422: {"model": ErrorResponse, "description": "The detail names the field and the rule it broke."},
    503: {"model": ErrorResponse, "description": "Sentence mode: the model's files are missing or unreadable."},
}


@router.post(
    "/attention",
    summary="Every stage of scaled dot-product attention",
    response_model=AttentionResponse,
    responses=_ATTENTION_RESPONSES,
    openapi_extra={"requestBody": _ATTENTION_BODY},
)
async def post_attention(request: Request) -> Response:
    """scores = q·kᵀ, scaled = scores/√d_k, masked, weights = softmax(masked), output = weights·v."""
    body = await read_body(request)
    content_type = request.headers.get("content-type", "application/json")
    if len(body) <= _INLINE_BODY_BYTES:
        req = _parse(body, content_type)
    else:  # parsing megabytes of JSON takes a while: not on the event loop, where every client waits
        req = await anyio.to_thread.run_sync(_parse, body, content_type)
    if model_service.is_sentence_request(req):  # {"sentence", "layer", "head"}: a model's own q, k, v
        return await model_service.respond(request, req)
    inp = checked(req)
    as_frame = frame.FRAME_MEDIA_TYPE in request.headers.get("accept", "")
    backend: Backend = request.app.state.backend
    answer_type = frame.FRAME_MEDIA_TYPE if as_frame else "application/json"
    if inp.q.size // inp.q.shape[-1] * inp.q.shape[-2] <= _INLINE_CELLS:  # h·n·n small: microseconds of work
        return Answer(_compute_and_encode(inp, backend, as_frame), answer_type)
    # weights·v cannot overflow unless |v| nears float64's end (the weights sum to 1): only then
    # must the whole output exist before the answer may start
    if as_frame and np.abs(inp.v).max() < _SAFE_V:
        return await stream_in_slot(answer_type, _start_frame, inp, backend)
    return await in_slot(answer_type, _compute_and_encode, inp, backend, as_frame)


@router.get("/examples", summary="The built-in examples", response_model=list[ExampleOut])
async def list_examples() -> list[ExampleOut]:
    return [_example_out(e) for e in EXAMPLES.values()]


@router.get(
    "/examples/{example_id}",
    summary="One built-in example",
    response_model=ExampleOut,
    responses={404: {"model": ErrorResponse, "description": "No example with that id."}},
)
async def get_example(example_id: str) -> ExampleOut:
    if example_id not in EXAMPLES:
        raise ClientError(
            404, ["path", "example_id"], f"no example {example_id!r}; there are {sorted(EXAMPLES)}", "not_found"
        )
    return _example_out(EXAMPLES[example_id])


def _example_out(e: Example) -> ExampleOut:
    return ExampleOut(
        id=e.id,
        title=e.title,
        source=e.source,
        description=e.description,
        tokens=list(e.tokens),
        q=e.q.tolist(),
        k=e.k.tolist(),
        v=e.v.tolist(),
        mask=e.mask,
    )


def _parse(body: bytes, content_type: str) -> AttentionRequest:
    media = media_type(content_type)
    try:
        if media == frame.FRAME_MEDIA_TYPE:
            try:
                fields, arrays = frame.decode(body)
            except frame.FrameError as e:
                raise ClientError.of(422, e.items) from None
            if twice := sorted(set(fields) & set(arrays)):
                msg = f"frame: {twice[0]} is sent twice, in the header's fields and as an array"
                raise ClientError(422, ["body", twice[0]], msg, "frame_invalid")
            return AttentionRequest.model_validate({**fields, **arrays})
        if is_json(media):
            no_bools = b"true" not in body and b"false" not in body  # lets numpy convert matrices in C
            return AttentionRequest.model_validate_json(body, context={"no_bools": no_bools})
    except ValidationError as e:
        raise body_error(e) from None
    raise ClientError(
        415,
        ["header", "content-type"],
        f"send application/json or {frame.FRAME_MEDIA_TYPE}, not {media!r}",
        "media_type",
    )


def _compute_and_encode(inp: AttentionInput, backend: Backend, as_frame: bool) -> Body:
    with np.errstate(over="ignore", invalid="ignore"):
        stages = attention(inp.q, inp.k, inp.v, inp.mask, backend)
    _check_finite(stages)
    fields = _fields(inp)
    arrays = {"q": inp.q, "k": inp.k, "v": inp.v, **stages.as_dict()}
    if as_frame:
        return frame.parts(fields, arrays)
    return orjson.dumps({**fields, **arrays}, option=orjson.OPT_SERIALIZE_NUMPY)


def _fields(inp: AttentionInput) -> dict[str, Any]:
    """The answer's fields besides the arrays."""
    return {"tokens": inp.tokens, "mask": inp.mask, "d_k": int(inp.q.shape[-1])}


def _check_finite(s: Stages) -> None:
    _check_scores(s.scores)
    if not np.isfinite(s.output).all():
        raise InputError("v", "weights·v overflows float64 (beyond ±1.8e308): make v smaller")


def _check_scores(scores: np.ndarray) -> None:
    if not np.isfinite(scores).all():  # (scaled and weights are finite whenever scores are)
        raise InputError("q", "q·k scores overflow float64 (beyond ±1.8e308): make q or k smaller")


def _start_frame(inp: AttentionInput, backend: Backend) -> Start:
    """A frame answer that leaves while it is computed: the header, q, k, v and the checked scores
    now; scaled, masked (unless it is scaled), weights and output as each is made."""
    with np.errstate(over="ignore", invalid="ignore"):
        computed = stages(inp.q, inp.k, inp.v, inp.mask, backend)
        _, scores = next(computed)
    _check_scores(scores)
    fields = _fields(inp)
    shapes = {"q": inp.q.shape, "k": inp.k.shape, "v": inp.v.shape, "scores": scores.shape}
    shapes |= {"scaled": scores.shape, "masked": scores.shape, "weights": scores.shape, "output": inp.v.shape}
    same_as = {"masked": "scaled"} if inp.mask == "full" else {}
    ready = [frame.header(fields, shapes, same_as)]
    for a in (inp.q, inp.k, inp.v, scores):
        ready += frame.data(a)
    size = sum(map(len, ready)) + sum(8 * math.prod(shapes[s]) for s in STAGES[1:] if s not in same_as)

    def later() -> Iterator[memoryview]:
        with np.errstate(over="ignore", invalid="ignore"):
            for name, a in computed:
                if name not in same_as:
                    yield from frame.data(a)

    return ready, later(), size
