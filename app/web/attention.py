"""The HTTP API: thin routes from requests to app.attention and back."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import numpy as np
from fastapi import APIRouter, Request, Response
from pydantic import ValidationError

from app import export, frame, handset, limits
from app.attention import STAGES, Backend, stages
from app.errors import ClientError, InputError
from app.examples import EXAMPLES, Example
from app.model import registry
from app.model import service as model_service
from app.schemas import (
    ARRAY_NAMES,
    STAGE_NAMES,
    SUMMARY_NAMES,
    ArrayName,
    AttentionInput,
    AttentionRequest,
    AttentionResponse,
    ExampleOut,
    checked,
)
from app.web.http import (
    DirectRoute,
    body_error,
    declared_size,
    error_docs,
    is_json,
    json_bytes,
    media_type,
    read_body,
)
from app.web.transport import (
    PARSE_SLOTS,
    Answer,
    Body,
    Start,
    in_slot,
    preferred,
    stream_in_slot,
)

router = APIRouter(prefix="/api", tags=["attention"])
_INLINE_BODY_BYTES = 64 * 1024  # bodies up to this size are parsed on the event loop
_INLINE_CELLS = 4096  # below this many cells a request is computed on the event loop: a thread hop costs more
_PIECE_BYTES = 4 << 20  # a streamed frame's stages are computed and sent this many bytes of heads at a time
_SAFE_V = 1e308  # |v| below this cannot make weights·v overflow, so a frame may stream before output exists
CSV_MEDIA_TYPE = "text/csv; charset=utf-8"

FRAME_LAYOUT = f"""
A binary frame (`{frame.FRAME_MEDIA_TYPE}`):

    bytes 0–3   "ATF1"
    bytes 4–7   H, the header length, uint32 little-endian (H ≤ {frame.MAX_HEADER_BYTES:,})
    bytes 8…    the header: UTF-8 JSON, space-padded so that the data starts 8-byte aligned
    then        the arrays: little-endian, C order, each zero-padded to a multiple of 8 bytes

The header is a JSON object with the other fields as in JSON plus
`"arrays": {{name: {{"shape": [...], "offset": bytes from the start of the data, "dtype": "float64" | "float32"}}}}`.
Names: {", ".join(frame.ARRAY_NAMES)}. Shapes: at most {frame.MAX_NDIM} whole numbers, each 0…{frame.MAX_AXIS};
offsets: multiples of 8. Two names may share the very same bytes (with the full mask `masked` is `scaled`);
otherwise arrays do not overlap and together cover the data exactly (no gap, no trailing bytes).
The header nests at most {frame.MAX_HEADER_DEPTH} levels and holds no NaN or Infinity.
A request sends q, k, v so; an answer carries −∞ (hidden cells of `masked`) as −∞.
Anything else is a 422 whose detail says where.
"""

_ATTENTION_BODY = {
    "required": True,
    "content": {
        "application/json": {"schema": AttentionRequest.model_json_schema()},
        frame.FRAME_MEDIA_TYPE: {
            "schema": {"type": "string", "format": "binary"},
            "description": "A binary frame with arrays q, k, v and the other fields in its header." + FRAME_LAYOUT,
        },
    },
}
_ATTENTION_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": f"Every stage (or those named in `stages`). With `Accept: {frame.FRAME_MEDIA_TYPE}` "
        "preferred over JSON (q-values honoured; a tie is JSON) the same fields come as a binary frame. "
        "`?format=csv` gives one array as CSV, `?format=json` the JSON as a file to download." + FRAME_LAYOUT,
        "content": {
            frame.FRAME_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}},
            "text/csv": {"schema": {"type": "string"}},
        },
    },
    **error_docs(
        422,
        s413=f"Body over {limits.MAX_BODY_BYTES:,} bytes.",
        s415="Body neither JSON nor a frame.",
        s503="Sentence mode: the model's files are missing or unreadable.",
    ),
}
Format = Literal["json", "csv"]
FORMATS: tuple[Format, ...] = ("json", "csv")
_QUERY = [
    {
        "name": "format",
        "in": "query",
        "required": False,
        "schema": {"enum": list(FORMATS)},
        "description": "csv: one array as CSV (see stage); json: the JSON answer as a file to download.",
    },
    {
        "name": "stage",
        "in": "query",
        "required": False,
        "schema": {"enum": list(ARRAY_NAMES)},
        "description": "The array to answer (with format=csv: to export; default weights). "
        "CSV rows: queries; columns: keys.",
    },
]


def _query(request: Request) -> tuple[Format | None, ArrayName | None]:
    """?format= and ?stage=, or a 422 naming the one that is not allowed."""
    if not request.scope.get("query_string"):
        return None, None
    params = request.query_params
    format, stage = params.get("format"), params.get("stage")
    if format is not None and format not in FORMATS:
        msg = f"format must be one of {', '.join(FORMATS)}, not {format[:40]!r}"
        raise ClientError(422, ["query", "format"], msg, "literal_error")
    if stage is not None and stage not in ARRAY_NAMES:
        msg = f"stage must be one of {', '.join(ARRAY_NAMES)}, not {stage[:40]!r}"
        raise ClientError(422, ["query", "stage"], msg, "literal_error")
    return format, stage


@dataclass(frozen=True)
class Wanted:
    """What the client asked to get back: which arrays, in which encoding, as which file."""

    names: tuple[ArrayName, ...]
    kind: Literal["json", "frame", "csv"]
    dtype: Literal["float64", "float32"]
    filename: str | None

    @property
    def media_type(self) -> str:
        return {"json": "application/json", "frame": frame.FRAME_MEDIA_TYPE, "csv": CSV_MEDIA_TYPE}[self.kind]

    @property
    def headers(self) -> dict[str, str]:
        return {"content-disposition": f'attachment; filename="{self.filename}"'} if self.filename else {}


async def post_attention(request: Request) -> Response:
    """scores = q·kᵀ, scaled = scores/√d_k, masked, weights = softmax(masked), output = weights·v."""
    format, stage = _query(request)  # read by hand: FastAPI's parameter machinery costs ~100 µs a request
    content_type = request.headers.get("content-type", "application/json")
    declared = declared_size(request)
    if declared is not None and declared <= _INLINE_BODY_BYTES:
        req = _parse(await read_body(request), content_type)
    else:  # a large body is read only once one of the PARSE_SLOTS is free (until then it waits in the
        # client's socket, not in our memory), then parsed off the event loop: parsing megabytes of
        # JSON takes a while and several times the body's memory
        async with PARSE_SLOTS:
            if media_type(content_type) == frame.FRAME_MEDIA_TYPE and declared is not None:
                body: bytes | memoryview = await _frame_body(request, declared)
            else:
                body = await read_body(request)
            req = await anyio.to_thread.run_sync(_parse, body, content_type)
            del body
    wanted = _wanted(request, req, format, stage)
    if model_service.is_sentence_request(req):  # {"sentence", "layer", "head"}: a model's own q, k, v
        if req.mistake is not None:
            raise InputError("mistake", "mistake goes with hand-set q, k and v, not with a sentence")
        return await in_slot(wanted.media_type, _sentence_answer, request, req, wanted, headers=wanted.headers)
    inp = checked(req)
    backend: Backend = request.app.state.backend
    if inp.q.size // inp.q.shape[-1] * inp.q.shape[-2] <= _INLINE_CELLS:  # h·n·n small: microseconds of work
        return Answer(_compute_and_encode(inp, backend, wanted, req.mistake), wanted.media_type, None, wanted.headers)
    # weights·v cannot overflow unless |v| nears float64's end (the weights sum to 1): only then
    # must the whole output exist before the answer may start
    if wanted.kind == "frame" and req.mistake is None and max(-inp.v.min(), inp.v.max()) < _SAFE_V:
        return await stream_in_slot(wanted.media_type, _start_frame, inp, backend, wanted)
    return await in_slot(
        wanted.media_type, _compute_and_encode, inp, backend, wanted, req.mistake, headers=wanted.headers
    )


router.add_api_route(
    "/attention",
    post_attention,
    methods=["POST"],
    summary="Every stage of scaled dot-product attention",
    response_model=AttentionResponse,
    response_model_exclude_none=True,
    responses=_ATTENTION_RESPONSES,
    openapi_extra={"requestBody": _ATTENTION_BODY, "parameters": _QUERY},
    route_class_override=DirectRoute,  # the handler reads the request itself: FastAPI's handler would cost ~60 µs
)


@router.get("/examples", summary="The built-in examples", response_model=list[ExampleOut])
async def list_examples() -> list[ExampleOut]:
    return [_example_out(e) for e in EXAMPLES.values()]


@router.get(
    "/examples/{example_id}",
    summary="One built-in example",
    response_model=ExampleOut,
    responses=error_docs(s404="No example with that id."),
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


async def _frame_body(request: Request, size: int) -> memoryview:
    """A frame body of its declared size (within the limit: read_body's 413 otherwise), read into
    memory kept from earlier answers (handset.SCRATCH): the pages of a fresh 6 MiB buffer cost more
    to fault in than the copying does. Read-only, as bytes are: the arrays decoded from it are views."""
    if size > limits.MAX_BODY_BYTES:
        return memoryview(await read_body(request))  # its 413
    body = handset.SCRATCH.take((size,), np.uint8).data
    got = 0
    async for chunk in request.stream():
        if got + len(chunk) > size:
            msg = f"the body is longer than its content-length ({size:,} bytes)"
            raise ClientError(400, ["header", "content-length"], msg, "value_error")
        body[got : got + len(chunk)] = chunk
        got += len(chunk)
    return body[:got].toreadonly()


def _parse(body: bytes | memoryview, content_type: str) -> AttentionRequest:
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
            if unknown := sorted(set(arrays) - {"q", "k", "v"}):
                msg = f"frame: a request's arrays are q, k and v, not {unknown[0]}"
                raise ClientError(422, ["body", "arrays", unknown[0]], msg, "frame_invalid")
            return AttentionRequest.model_validate({**fields, **arrays}, strict=True)
        if is_json(media):
            body = body if isinstance(body, bytes) else bytes(body)
            no_bools = b"true" not in body and b"false" not in body  # lets numpy convert matrices in C
            return AttentionRequest.model_validate_json(body, strict=True, context={"no_bools": no_bools})
    except ValidationError as e:
        raise body_error(e) from None
    raise ClientError(
        415,
        ["header", "content-type"],
        f"send application/json or {frame.FRAME_MEDIA_TYPE}, not {media!r}",
        "media_type",
    )


def _wanted(request: Request, req: AttentionRequest, format: Format | None, stage: ArrayName | None) -> Wanted:
    """The arrays and encoding asked for, or a 422 naming the field that asks for the impossible."""
    if stage is not None and req.stages is not None:
        raise ClientError(422, ["query", "stage"], "send ?stage= or the body's stages, not both", "value_error")
    default = ARRAY_NAMES if req.sentence is not None else STAGE_NAMES  # a summary's own: a sentence's only
    names = tuple(req.stages) if req.stages is not None else default
    names = (stage,) if stage is not None else tuple(n for n in ARRAY_NAMES if n in names)
    if req.sentence is None and (name := next((n for n in names if n in SUMMARY_NAMES), None)):
        raise InputError("stages", f"{name} is a long sentence's summary: it goes with sentence (detail 'summary')")
    if format == "csv":
        names = names if stage is not None or req.stages is not None else ("weights",)
        if len(names) != 1:
            raise InputError("stages", "format=csv exports one array: name it with ?stage= (e.g. stage=weights)")
    if format is not None:
        kind: Literal["json", "frame", "csv"] = format
    else:
        accepted = preferred(request.headers.get("accept"), ("application/json", frame.FRAME_MEDIA_TYPE))
        kind = "frame" if accepted == frame.FRAME_MEDIA_TYPE else "json"
    if req.dtype != "float64" and kind != "frame":
        raise InputError("dtype", f"dtype {req.dtype!r} is for binary frame answers; {kind.upper()} is float64")
    parts = ["attention"]
    if req.sentence is not None:
        parts += [
            f"layer{req.layer if req.layer is not None else 0}",
            f"head{req.head if req.head is not None else 'all'}",
        ]
    if len(names) == 1:
        parts.append(names[0])
    filename = f"{'-'.join(parts)}.{format}" if format else None
    return Wanted(names, kind, req.dtype, filename)


def _encode(fields: dict[str, Any], arrays: dict[str, np.ndarray], wanted: Wanted) -> Body:
    """The answer's fields and the arrays asked for (of those it has: a full answer has no summary)."""
    chosen: dict[str, np.ndarray] = {name: arrays[name] for name in wanted.names if name in arrays}
    if wanted.kind == "frame":
        return frame.parts(fields, chosen, wanted.dtype)
    if wanted.kind == "csv":
        name = wanted.names[0]
        if fields.get("detail") == "summary" or name not in chosen:
            msg = f"format=csv exports an n × n stage of a sentence up to its every cell ({name} is not one)"
            raise InputError("format", msg)
        return export.stage_csv(name, chosen[name], fields["tokens"])
    return json_bytes({**fields, **chosen})


def _sentence_answer(request: Request, req: AttentionRequest, wanted: Wanted) -> Body:
    """Run in a worker thread, in a compute slot: the model's stages, encoded (JSON can take a second)."""
    handle = registry.handle(req.model, request.app.state.model_dir)
    backend: Backend = request.app.state.backend
    fields, arrays = model_service.sentence_view(
        handle, req.sentence or "", req.layer, req.head, req.mask, req.mask is not None, backend,
        req.detail, req.rows, req.block, req.top_k, wanted.names,
    )  # fmt: skip
    if req.detail == "full" and (name := next((n for n in req.stages or () if n in SUMMARY_NAMES), None)):
        raise InputError("stages", f"{name} goes with detail 'summary' (a long sentence's table in blocks)")
    return _encode(fields, arrays, wanted)


def _compute_and_encode(inp: AttentionInput, backend: Backend, wanted: Wanted, mistake: Any = None) -> Body:
    return _encode(*handset.compute(inp, backend, mistake), wanted)


def _start_frame(inp: AttentionInput, backend: Backend, wanted: Wanted) -> Start:
    """A frame answer that leaves while it is computed: the header and the asked-for q, k, v now,
    then each stage as it is made, a few heads at a time (_PIECE_BYTES). Stages after the last one
    asked for are not computed.

    When Cauchy–Schwarz rules out an overflowing score (handset.bounded: nearly always), the answer
    starts before the scores are computed; otherwise they are computed whole and checked first, so
    that the request can still be refused with a 422."""
    names = wanted.names
    every = {"q": inp.q.shape, "k": inp.k.shape, "v": inp.v.shape, "output": inp.v.shape}
    every |= {s: inp.q.shape[:-1] + inp.k.shape[-2:-1] for s in STAGES[:-1]}  # (…, n, n)
    shapes: dict[str, tuple[int, ...]] = {name: every[name] for name in names}
    same_as = {"masked": "scaled"} if inp.mask == "full" and {"masked", "scaled"} <= set(names) else {}
    given = {"q": inp.q, "k": inp.k, "v": inp.v}
    ready = [frame.header(handset.fields(inp), shapes, same_as, wanted.dtype)]
    ready += [part for name in names if name in given for part in frame.data(given[name], wanted.dtype)]
    size = len(ready[0]) + sum(frame.size(shapes[name], wanted.dtype) for name in names if name not in same_as)
    last = max((STAGES.index(name) for name in names if name in STAGES), default=-1)
    check_first = last >= 0 and not handset.bounded(inp.q, inp.k)
    computed: Iterator[tuple[str, np.ndarray, np.ndarray]]
    if backend == "numpy":  # app.attention's stages, written into memory kept from earlier answers
        heads = 0 if check_first else max(1, _PIECE_BYTES // (8 * inp.q.shape[-2] ** 2))
        computed = handset.stages_into(inp.q, inp.k, inp.v, inp.mask, handset.SCRATCH.take, heads)
    else:
        computed = ((name, a, a) for name, a in stages(inp.q, inp.k, inp.v, inp.mask, backend))
    done = dict.fromkeys(STAGES, 0)  # the cells of each stage computed so far
    if check_first:
        with np.errstate(over="ignore", invalid="ignore"):
            _, scores, _ = next(computed)  # whole (heads=0)
        handset.check_scores(scores, inp.q, inp.k)
        ready += frame.data(scores, wanted.dtype) if "scores" in names else []
        done["scores"] = scores.size
    sent = {name for name in STAGES if name in names and name not in same_as}

    def later() -> Iterator[memoryview]:
        if last < 0 or done[STAGES[last]]:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            for name, stage, piece in computed:
                done[name] += piece.size
                if name in sent:
                    yield from frame.data(piece, wanted.dtype, pad=False)
                    yield from frame.padding(stage.shape, wanted.dtype) if done[name] == stage.size else []
                if name == STAGES[last] and done[name] == stage.size:
                    return

    return ready, later(), size
