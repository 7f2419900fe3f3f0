"""Request and response models of the API, and the checks that turn a request into arrays.

Every rejection names the field and the rule it broke; the numbers come from app.limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    Strict,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from app import limits
from app.attention import Mask, Mistake, all_finite
from app.errors import InputError as InputError  # raised by checked(); defined in the leaf module app.errors
from app.model import registry

Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]
_LEAVES: dict[int, TypeAdapter[Any]] = {2: TypeAdapter(list[list[Number]]), 3: TypeAdapter(list[list[list[Number]]])}


def _depth(value: list[Any]) -> int:
    first = value[0] if value else None
    return 3 if isinstance(first, list) and first and isinstance(first[0], list) else 2


def _fast_array(value: list[Any], depth: int, info: ValidationInfo) -> np.ndarray | None:
    """numpy's own conversion, when it cannot have been fooled; None sends the value the strict way.

    np.array() turns a rectangular list of ints and floats into a numeric array in C, but would also
    read JSON true/false as 1/0; the caller says (context "no_bools") when the raw body holds neither.
    """
    if not (info.context or {}).get("no_bools"):
        return None
    try:
        arr = np.array(value)
    except ValueError:  # ragged
        return None
    if arr.ndim != depth or arr.dtype.kind not in "fi":
        return None
    return arr if arr.dtype.kind == "f" else arr.astype(np.float64)


def _matrix(value: Any, info: ValidationInfo) -> np.ndarray:
    """A JSON nested list (or a decoded frame array) as a float64 array of 2 or 3 dimensions."""
    name = info.field_name or "matrix"
    arr: np.ndarray | None = None
    if isinstance(value, np.ndarray):
        if value.ndim not in (2, 3):
            raise PydanticCustomError("matrix_ndim", f"{name} must be 2-D (n × d) or 3-D (h × n × d)")
        if value.size == 0:
            raise PydanticCustomError("matrix_empty", f"{name} has shape {list(value.shape)}: no axis may be 0")
        arr = value.astype(np.float64, copy=False)
    else:
        if not isinstance(value, list) or not value:
            raise PydanticCustomError("matrix_type", f"{name} must be a non-empty list of rows of numbers")
        depth = _depth(value)
        arr = _fast_array(value, depth, info)
    if arr is None:  # the strict path: slower, and says exactly which entry is wrong
        try:
            rows = _LEAVES[depth].validate_python(value)
        except ValidationError as e:
            err = e.errors()[0]
            where = "".join(f"[{i}]" for i in err["loc"])
            raise PydanticCustomError("matrix_value", f"{name}{where}: {err['msg']}") from None
        try:
            arr = np.array(rows, dtype=np.float64)
        except ValueError:
            raise PydanticCustomError("matrix_ragged", f"{name}: {_ragged(rows)}") from None
    if not all_finite(arr):
        where = "".join(f"[{i}]" for i in np.argwhere(~np.isfinite(arr))[0])
        raise PydanticCustomError(
            "matrix_value", f"{name}{where}: Input should be a finite number (no NaN or ±Infinity)"
        )
    return arr


def _ragged(rows: list[Any], where: str = "") -> str:
    """Say which row breaks a rectangular shape (only called once numpy has refused it)."""
    if rows and isinstance(rows[0], list):
        for i, row in enumerate(rows):
            if len(row) != len(rows[0]):
                return f"row {where}[{i}] has {len(row)} entries but row {where}[0] has {len(rows[0])}"
            if inner := _ragged(row, f"{where}[{i}]"):
                return inner
    return ""


_ROW = {"type": "array", "minItems": 1, "maxItems": limits.MAX_DIM, "items": {"type": "number"}}
_ROWS = {"type": "array", "minItems": 1, "maxItems": limits.MAX_TOKENS, "items": _ROW}
Matrix = Annotated[
    Any,
    PlainValidator(_matrix),
    WithJsonSchema({"anyOf": [_ROWS, {"type": "array", "minItems": 1, "maxItems": limits.MAX_HEADS, "items": _ROWS}]}),
]
Token = Annotated[str, StringConstraints(max_length=limits.MAX_TOKEN_CHARS)]
Sentence = Annotated[str, StringConstraints(max_length=limits.MAX_SENTENCE_CHARS)]


def _int_or_mean(value: Any, info: ValidationInfo) -> int | Literal["mean"] | None:
    """A 0-based index or "mean", with one plain message for anything else (no validator internals)."""
    if value is None or value == "mean" or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value  # type: ignore[no-any-return]
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "…"
    raise PydanticCustomError("int_or_mean", f'{info.field_name} must be a whole number ≥ 0 or "mean", not {shown}')


IntOrMean = Annotated[
    Any,
    PlainValidator(_int_or_mean),
    WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0}, {"const": "mean"}, {"type": "null"}]}),
]
MaskField = Annotated[
    Literal["full", "causal"],
    Field(description="full: every query sees every key (BERT). causal: query i sees keys 0..i only (GPT)."),
]
MaskOrDefault = Annotated[
    Literal["full", "causal"] | None,
    Field(
        description="full: every query sees every key (BERT). causal: query i sees keys 0..i only (GPT). "
        "null or omitted: the default (full; in sentence mode the model's own mask), as in /api/heads."
    ),
]
ArrayName = Literal[
    "q", "k", "v", "scores", "scaled", "masked", "weights", "output",
    "block_mean", "block_peak", "top_keys", "top_weights",
]  # fmt: skip
STAGE_NAMES: tuple[ArrayName, ...] = ("q", "k", "v", "scores", "scaled", "masked", "weights", "output")
SUMMARY_NAMES: tuple[ArrayName, ...] = ("block_mean", "block_peak", "top_keys", "top_weights")  # detail "summary"
ARRAY_NAMES: tuple[ArrayName, ...] = (*STAGE_NAMES, *SUMMARY_NAMES)
_SHAPES = (
    f"One row per token: n × d (one head) or h × n × d (heads first). Finite numbers only; "
    f"n ≤ {limits.MAX_TOKENS}, h ≤ {limits.MAX_HEADS}, d ≤ {limits.MAX_DIM}, "
    f"q, k and v together ≤ {limits.MAX_INPUT_VALUES:,} numbers, h·n·n ≤ {limits.MAX_CELLS:,}."
)


class AttentionRequest(BaseModel):
    """Q, K and V set by hand; the server computes every stage of attention on them."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "tokens": ["the", "cat", "ate", "its", "fish"],
                    "q": [[1.5, 0], [0, 1.2], [1.2, 0], [2, 0], [0, 1.5]],
                    "k": [[0, 0], [3, 0], [0, 3], [0.5, 0], [1, 0.5]],
                    "v": [[0, 0], [1, 0], [0, 0.5], [0.3, 0], [0, 1]],
                    "mask": "causal",
                }
            ]
        },
    )

    tokens: list[Token] | None = Field(
        None,
        max_length=limits.MAX_TOKENS,
        description=f"A label per row (default t0, t1, …), ≤ {limits.MAX_TOKEN_CHARS} characters each.",
    )
    q: Matrix = Field(None, description="Queries. " + _SHAPES + " Required unless sentence is sent.")
    k: Matrix = Field(None, description="Keys: the same shape as q.")
    v: Matrix = Field(None, description="Values: the same rows as q; d_v may differ from d_k.")
    mask: MaskOrDefault = None
    # Sentence mode (app/model): a pretrained model's own q, k, v instead of hand-set ones.
    sentence: Sentence | None = Field(
        None,
        description=f"Instead of tokens, q, k, v: text for the model (default all-MiniLM-L6-v2) to read; "
        f"≤ {limits.MAX_SENTENCE_CHARS:,} characters and ≤ the model's max_tokens (GET /api/model).",
    )
    model: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        None, description="With sentence: a model id of GET /api/models (default: the server's own model)."
    )
    layer: IntOrMean = Field(None, description="With sentence: 0-based layer, or 'mean' over layers (default 0).")
    head: IntOrMean = Field(
        None, description="With sentence: 0-based head, 'mean' over heads, or omitted for all heads (a head axis)."
    )
    stages: list[ArrayName] | None = Field(
        None,
        min_length=1,
        max_length=len(ARRAY_NAMES),
        description="The arrays to answer, of q, k, v, scores, scaled, masked, weights, output "
        "(and with detail summary block_mean, block_peak, top_keys, top_weights; default: all of them). "
        "An answer leaves out what its detail does not have (a full answer has no blocks: a client that does "
        "not know a sentence's length may name both). The other fields always come.",
    )
    # A long sentence (app.lod): past the model's max_tokens for every cell (512), up to its long limit (4,096)
    detail: Literal["full", "summary"] | None = Field(
        None,
        description="With sentence: full, every cell of the n × n stages (up to 512 tokens); summary, the rows "
        "named in `rows` over every key, and the whole table in blocks (block_mean, block_peak) with each "
        f"query's strongest keys (top_keys, top_weights), up to {limits.MAX_LONG_TOKENS:,} tokens. Default: "
        "full when the sentence allows it, else summary.",
    )
    rows: list[Annotated[int, Strict(), Field(ge=0)]] | None = Field(
        None,
        min_length=1,
        max_length=limits.MAX_ROWS,
        description=f"Detail summary: the queries (0-based) whose stages come whole, ≤ {limits.MAX_ROWS} "
        "(default: the first 32).",
    )
    block: Annotated[int, Strict()] | None = Field(
        None,
        description="Detail summary: tokens per block of block_mean and block_peak, 1 … n (the last block is "
        "shorter when it does not divide n; default ⌈n / 16⌉).",
    )
    top_k: Annotated[int, Strict(), Field(ge=1, le=limits.MAX_TOP_K)] | None = Field(
        None, description=f"Detail summary: strongest keys per query in top_keys, 1 … {limits.MAX_TOP_K} (default 8)."
    )
    dtype: Literal["float64", "float32"] = Field(
        "float64",
        description="Binary frame answers only: float32 halves the bytes. JSON and CSV are always float64.",
    )
    mistake: Mistake | None = Field(
        None,
        description="Hand-set q, k, v only: answer the same fields computed with a classic mistake. "
        "no-scale: scaled = scores (no ÷√d_k). softmax-columns: softmax over each column (axis −2) instead of "
        "each row. mask-after-softmax: softmax of the unmasked scaled scores, then hidden keys set to 0 "
        "(masked = scaled; rows no longer sum to 1).",
    )


@dataclass(frozen=True)
class AttentionInput:
    tokens: list[str]
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: Mask


def checked(req: AttentionRequest) -> AttentionInput:
    """The request's arrays, once their shapes fit together and within the limits."""
    for name in ("q", "k", "v"):
        if getattr(req, name) is None:
            raise InputError(name, f"{name} is required (send q, k and v, or a sentence)")
    q, k, v = req.q, req.k, req.v
    if k.ndim != q.ndim or v.ndim != q.ndim:
        raise InputError(
            "k" if k.ndim != q.ndim else "v", f"q, k and v must have the same number of dimensions (q is {q.ndim}-D)"
        )
    n = q.shape[-2]
    if k.shape != q.shape:
        raise InputError("k", f"k must have the shape of q {list(q.shape)}, got {list(k.shape)}")
    if v.shape[:-1] != q.shape[:-1]:
        raise InputError("v", f"v must have {n} rows like q (shape {list(q.shape[:-1])} + [d_v]), got {list(v.shape)}")
    for name, a in (("q", q), ("v", v)):
        if a.shape[-1] < 1:
            raise InputError(name, f"{name} rows must have at least 1 number (d_k, d_v ≥ 1)")
        if a.shape[-1] > limits.MAX_DIM:
            raise InputError(name, f"{name} rows have {a.shape[-1]} numbers; the limit is {limits.MAX_DIM}")
    if q.ndim == 3 and not 1 <= q.shape[0] <= limits.MAX_HEADS:
        raise InputError("q", f"q has {q.shape[0]} heads; between 1 and {limits.MAX_HEADS} are allowed")
    if n > limits.MAX_TOKENS:
        raise InputError("q", f"q has {n} tokens (rows); the limit is {limits.MAX_TOKENS}")
    heads = q.shape[0] if q.ndim == 3 else 1
    if heads * n * n > limits.MAX_CELLS:
        raise InputError(
            "q", f"{heads} heads × {n}² tokens = {heads * n * n:,} cells per stage; the limit is {limits.MAX_CELLS:,}"
        )
    if (total := q.size + k.size + v.size) > limits.MAX_INPUT_VALUES:
        raise InputError("q", f"q, k and v hold {total:,} numbers together; the limit is {limits.MAX_INPUT_VALUES:,}")
    tokens = req.tokens if req.tokens is not None else [f"t{i}" for i in range(n)]
    if len(tokens) != n:
        raise InputError("tokens", f"tokens has {len(tokens)} labels but q has {n} rows")
    return AttentionInput(tokens, q, k, v, req.mask or "full")


class AttentionResponse(BaseModel):
    """Every stage, by name. 3-D input (heads first) gives 3-D stages."""

    tokens: list[str]
    mask: Literal["full", "causal"]
    d_k: int = Field(description="Length of a query/key vector; scaled = scores / √d_k.")
    # The arrays: every one unless the request names some in "stages".
    q: list[Any] | None = Field(None, description="The queries used, as sent.")
    k: list[Any] | None = Field(None, description="The keys used, as sent.")
    v: list[Any] | None = Field(None, description="The values used, as sent.")
    scores: list[Any] | None = Field(None, description="q·kᵀ: one row per query, one column per key (n × n).")
    scaled: list[Any] | None = Field(None, description="scores / √d_k.")
    masked: list[Any] | None = Field(None, description="scaled with −∞ where the mask hides a key, written as null.")
    weights: list[Any] | None = Field(
        None, description="Row-wise softmax of masked: each row sums to 1; hidden keys get 0."
    )
    output: list[Any] | None = Field(None, description="weights · v: each query's mix of the values (n × d_v).")
    mistake: Mistake | None = Field(None, description="Echoed when the request asked for a mistake.")
    # Sentence mode only (app/model): q, k, v above are the model's own for that layer and head.
    model: str | None = Field(None, description="Sentence mode: the model's name.")
    kind: Literal["bert", "gpt2", "llama"] | None = Field(
        None, description="Sentence mode: encoder (bert) or decoder (gpt2, llama)."
    )
    words: list[int | None] | None = Field(None, description="Sentence mode: word index per token, null for [CLS].")
    spans: list[list[int] | None] | None = Field(
        None,
        description="Sentence mode: [start, end) of each token in the sentence, counted in Unicode code points "
        "(Python str indices; JavaScript strings count UTF-16 units: use Array.from(sentence)); null for [CLS].",
    )
    layer: int | Literal["mean"] | None = Field(None, description="Sentence mode: the layer shown, or 'mean'.")
    head: int | Literal["mean"] | None = Field(None, description="Sentence mode: the head shown, 'mean', or null: all.")
    mean_over: list[Literal["heads", "layers"]] | None = Field(None, description="Sentence mode: the axes averaged.")
    detail: Literal["full", "summary"] | None = Field(
        None, description="Sentence mode: full (every n × n stage) or summary (the rows named, the table in blocks)."
    )
    rows: list[int] | None = Field(
        None, description="Detail summary: the queries whose stages come; q, k, v, output are theirs (r × d) and "
        "scores … weights their rows over every key (r × n)."
    )  # fmt: skip
    block: int | None = Field(None, description="Detail summary: tokens per block.")
    edges: list[int] | None = Field(None, description="Detail summary: block b is tokens edges[b] … edges[b+1] − 1.")
    top_k: int | None = Field(None, description="Detail summary: strongest keys per query in top_keys.")
    block_mean: list[Any] | None = Field(
        None, description="Detail summary (B × B): over the queries of row block a, the mean share of their "
        "attention on key block c (each row sums to 1). float32 arithmetic: within 1e-5."
    )  # fmt: skip
    block_peak: list[Any] | None = Field(None, description="Detail summary (B × B): the largest weight in each block.")
    top_keys: list[Any] | None = Field(
        None, description="Detail summary (n × K): each query's strongest keys, strongest first; −1 past the "
        "keys it sees."
    )  # fmt: skip
    top_weights: list[Any] | None = Field(
        None, description="Detail summary (n × K): their weights (0 past the keys it sees)."
    )


class ExampleOut(BaseModel):
    id: str
    title: str
    source: str
    description: str
    tokens: list[str]
    q: list[list[float]]
    k: list[list[float]]
    v: list[list[float]]
    mask: Literal["full", "causal"]


class ErrorItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str
    ctx: dict[str, int | str] | None = None  # the numbers in msg by name, for a page that words it in its language


class ErrorResponse(BaseModel):
    detail: list[ErrorItem]


# ---- POST /api/generate (and the notebook's write()) ---------------------------------------------

ModelId = Annotated[str, StringConstraints(max_length=64)]


class GenerateRequest(BaseModel):
    """What to write after, and how to choose each next token."""

    model_config = ConfigDict(extra="forbid")

    model: ModelId | None = Field(None, description=f"A model id of GET /api/models (default {registry.DECODER_ID}).")
    prompt: Annotated[str, StringConstraints(max_length=limits.MAX_PROMPT_CHARS)] = Field(
        description=f"The text to go on from; ≤ {limits.MAX_PROMPT_CHARS:,} characters and "
        f"≤ {limits.MAX_PROMPT_TOKENS} tokens."
    )
    max_new_tokens: int = Field(
        32, ge=1, le=limits.MAX_NEW_TOKENS, description=f"Tokens to write, 1 … {limits.MAX_NEW_TOKENS}."
    )
    temperature: float = Field(
        0.0, ge=0.0, le=5.0, allow_inf_nan=False, description="0: always the most likely token (greedy); 0 … 5."
    )
    top_k: int = Field(0, ge=0, le=1000, description="Draw only from the k most likely tokens (0: no limit).")
    top_p: float = Field(
        1.0, gt=0.0, le=1.0, allow_inf_nan=False, description="Draw only from the likeliest tokens whose "
        "probabilities add up to p (1: no limit).",
    )  # fmt: skip
    seed: int | None = Field(None, ge=0, le=2**32 - 1, description="Makes sampling repeatable.")
    layer: int | None = Field(None, ge=0, description="The layer whose attention each line shows (default: the last).")
    head: int = Field(0, ge=0, description="The query head whose attention each line shows.")
    chat: bool = Field(False, description="Wrap the prompt in the model's chat template (a user's message).")
    ablate: list[Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]] = Field(
        default_factory=list,
        max_length=512,
        description="[[layer, head], …]: heads switched off while the model writes (each one's output zeroed "
        "before o_proj, as POST /api/ablate does).",
    )
