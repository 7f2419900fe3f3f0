"""The compact binary encoding of the API: a "frame" of named arrays.

Large attention tables are slow as JSON text (~20 bytes and a float parse per number), so a
client may send and receive this instead, media type FRAME_MEDIA_TYPE:

    bytes 0-3   b"ATF1"
    bytes 4-7   H, the header length, uint32 little-endian (H ≤ MAX_HEADER_BYTES)
    bytes 8-    the header: UTF-8 JSON, space-padded so the data starts 8-byte aligned
    then        the arrays, little-endian, C order, back to back; each array's bytes are
                zero-padded to a multiple of 8 (only a float32 array of odd size has padding)

The header is a JSON object holding the request's or response's other fields as in JSON, plus
"arrays": {name: {"shape": [...], "offset": bytes from the start of the data, "dtype": ...}}
with name one of ARRAY_NAMES, shape a list of at most MAX_NDIM non-negative integers each
≤ MAX_AXIS, offset a multiple of 8, dtype "float64" (the default) or "float32". Two names may
share the very same bytes (same offset and size: with the full mask `masked` is `scaled`);
otherwise arrays do not overlap, and together they cover the data exactly: no gap, nothing
after the last one. The header nests at most MAX_HEADER_DEPTH levels and holds no NaN or
±Infinity literal. In a response −∞ (hidden cells of "masked") stays −∞; JSON writes null.

A browser reads an array with new Float64Array(buffer, 8 + H + offset, count) (Float32Array
for "float32"); Python decodes a body with decode(), or reads an answer straight from its
stream with read(). decode() refuses anything else with a FrameError whose items say where
(loc), what (msg) and a type, as the API's 422s do.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Annotated, Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError

from app import limits

FRAME_MEDIA_TYPE = "application/x-attention-frame"
MAGIC = b"ATF1"
_PREFIX = struct.Struct("<4sI")
ARRAY_NAMES = (
    "q", "k", "v", "scores", "scaled", "masked", "weights", "output",
    "block_mean", "block_peak", "top_keys", "top_weights",  # a long sentence's summary (app.lod)
)  # fmt: skip
DTYPES: dict[str, np.dtype[Any]] = {"float64": np.dtype("<f8"), "float32": np.dtype("<f4")}
Dtype = Literal["float64", "float32"]
MAX_HEADER_BYTES = 1 << 20  # 512 tokens × 100 characters of labels fit many times over
MAX_HEADER_DEPTH = 8  # {"arrays": {"q": {"shape": [..]}}} is 4 levels deep; fields are shallower
MAX_NDIM = 4
MAX_AXIS = max(limits.MAX_TOKENS, limits.MAX_LONG_TOKENS, limits.MAX_DIM, limits.MAX_HEADS)
MAX_OFFSET = 1 << 40  # answers are larger than requests (MAX_BODY_BYTES): the body itself bounds it

Axis = Annotated[int, Strict(), Field(ge=0, le=MAX_AXIS)]


class ArraySpec(BaseModel):
    """Where one array lies in the data, and its shape and type."""

    model_config = ConfigDict(extra="forbid")

    shape: list[Axis] = Field(max_length=MAX_NDIM)
    offset: Annotated[int, Strict(), Field(ge=0, le=MAX_OFFSET, multiple_of=8)]
    dtype: Dtype = "float64"


class Layout(BaseModel):
    """The "arrays" entry of a header: names from ARRAY_NAMES only."""

    model_config = ConfigDict(extra="forbid")

    q: ArraySpec | None = None
    k: ArraySpec | None = None
    v: ArraySpec | None = None
    scores: ArraySpec | None = None
    scaled: ArraySpec | None = None
    masked: ArraySpec | None = None
    weights: ArraySpec | None = None
    output: ArraySpec | None = None
    block_mean: ArraySpec | None = None
    block_peak: ArraySpec | None = None
    top_keys: ArraySpec | None = None
    top_weights: ArraySpec | None = None


class FrameError(ValueError):
    """A frame that cannot be read; items say where (loc, under "body"), what (msg) and a type."""

    def __init__(self, msg: str, loc: tuple[str | int, ...] = (), type_: str = "frame_invalid") -> None:
        super().__init__(msg)
        self.items: list[dict[str, Any]] = [{"loc": ["body", *loc], "msg": msg, "type": type_}]

    @classmethod
    def of(cls, e: ValidationError, where: tuple[str | int, ...]) -> FrameError:
        err = e.errors()[0]
        loc = (*where, *err["loc"])
        out = cls(f"frame: {'.'.join(map(str, loc))}: {err['msg']}", loc)
        out.items = [
            {"loc": ["body", *where, *x["loc"]], "msg": f"frame: {x['msg']}", "type": "frame_invalid"}
            for x in e.errors()
        ]
        return out


def _padded(nbytes: int) -> int:
    return nbytes + (-nbytes % 8)


def header(
    fields: dict[str, Any],
    shapes: dict[str, tuple[int, ...]],
    same_as: dict[str, str],
    dtype: Dtype = "float64",
) -> memoryview:
    """The prefix and header of a frame whose arrays come in the order of shapes.

    An array named in same_as takes no bytes of its own: it points at the other array's.
    """
    size = DTYPES[dtype].itemsize
    offset, layout = 0, {}
    for name, shape in shapes.items():
        if name not in same_as:
            layout[name] = {"shape": list(shape), "offset": offset, "dtype": dtype}
            offset += _padded(math.prod(shape) * size)
    for name, other in same_as.items():
        layout[name] = {"shape": list(shapes[name]), "offset": layout[other]["offset"], "dtype": dtype}
    text = json.dumps({**fields, "arrays": layout}, separators=(",", ":")).encode()
    text += b" " * (-(_PREFIX.size + len(text)) % 8)
    return memoryview(_PREFIX.pack(MAGIC, len(text)) + text)


def data(a: np.ndarray, dtype: Dtype = "float64", pad: bool = True) -> list[memoryview]:
    """An array's bytes as a frame holds them, padded to 8 (no copy for a C-ordered float64 array).

    pad=False: without the padding, for a part of an array sent part by part (see padding)."""
    view = memoryview(np.ascontiguousarray(a, dtype=DTYPES[dtype]).data).cast("B")
    return [view, *padding(a.shape, dtype)] if pad else [view]


def padding(shape: tuple[int, ...], dtype: Dtype = "float64") -> list[memoryview]:
    """The zero bytes that follow an array of this shape in a frame (none, or up to 7)."""
    pad = -math.prod(shape) * DTYPES[dtype].itemsize % 8
    return [memoryview(bytes(pad))] if pad else []


def size(shape: tuple[int, ...], dtype: Dtype = "float64") -> int:
    """The bytes an array of this shape takes in a frame, padding included."""
    return _padded(math.prod(shape) * DTYPES[dtype].itemsize)


def parts(fields: dict[str, Any], arrays: dict[str, np.ndarray], dtype: Dtype = "float64") -> list[memoryview]:
    """A frame as a list of buffers, the arrays' own memory among them (float64: nothing is copied).

    An array that is the very same memory as an earlier one (masked is scaled when nothing is
    hidden, also when both are views of one head of them) is sent once, and both names point at it.
    """
    first: dict[tuple[Any, ...], str] = {}
    same_as: dict[str, str] = {}
    for name, a in arrays.items():
        key = (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)
        if key in first:
            same_as[name] = first[key]
        else:
            first[key] = name
    shapes = {name: a.shape for name, a in arrays.items()}
    out = [header(fields, shapes, same_as, dtype)]
    for name, a in arrays.items():
        if name not in same_as:
            out += data(a, dtype)
    return out


def encode(fields: dict[str, Any], arrays: dict[str, np.ndarray], dtype: Dtype = "float64") -> bytes:
    """One frame, as bytes."""
    return b"".join(parts(fields, arrays, dtype))


def _refuse_constant(name: str) -> None:
    raise FrameError(f"frame: the header holds {name}, which JSON does not allow", ("header",))


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise FrameError(f"frame: the header holds the number {text[:40]}, beyond float64", ("header",))
    return x


def _too_deep(value: Any) -> bool:
    """True when value nests deeper than MAX_HEADER_DEPTH (checked without recursion)."""
    level: list[Any] = [value]
    for _ in range(MAX_HEADER_DEPTH):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return False
    return any(isinstance(item, dict | list) for item in level)


def _read_header(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FrameError(f"frame: the header is not UTF-8 ({e.reason} at byte {e.start})", ("header",)) from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        raise FrameError(f"frame: the header nests deeper than {MAX_HEADER_DEPTH} levels", ("header",)) from None
    except ValueError as e:
        if isinstance(e, FrameError):
            raise
        raise FrameError(f"frame: the header is not valid JSON ({e})", ("header",)) from None
    if not isinstance(value, dict):
        raise FrameError("frame: the header must be a JSON object", ("header",))
    if _too_deep(value):
        raise FrameError(f"frame: the header nests deeper than {MAX_HEADER_DEPTH} levels", ("header",))
    return value


def decode(body: bytes | memoryview) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The fields and arrays of a frame (arrays are read-only views of body), or FrameError."""
    if len(body) < _PREFIX.size:
        raise FrameError(f"frame: {len(body)} bytes, shorter than its 8-byte prefix")
    magic, size = _PREFIX.unpack_from(body)
    if magic != MAGIC:
        raise FrameError(f"frame: must start with {MAGIC!r}")
    if size > MAX_HEADER_BYTES:
        raise FrameError(f"frame: header of {size:,} bytes; the limit is {MAX_HEADER_BYTES:,}", ("header",))
    start = _PREFIX.size + size
    if start > len(body):
        raise FrameError(f"frame: the header's length ({size:,} bytes) runs past the end of the body")
    if start % 8:
        raise FrameError("frame: the header must be space-padded so that the data starts 8-byte aligned")
    fields = _read_header(bytes(body[_PREFIX.size : start]))
    try:
        layout = Layout.model_validate(fields.pop("arrays", {}))
    except ValidationError as e:
        raise FrameError.of(e, ("arrays",)) from None
    specs = {name: spec for name in ARRAY_NAMES if (spec := getattr(layout, name)) is not None}
    length = len(body) - start
    ranges: dict[tuple[int, int], str] = {}
    arrays = {}
    for name, spec in specs.items():
        dtype = DTYPES[spec.dtype]
        count = math.prod(spec.shape)  # ≤ MAX_AXIS ** MAX_NDIM: a Python int, no overflow
        nbytes = _padded(count * dtype.itemsize)
        if spec.offset + nbytes > length:
            raise FrameError(
                f"frame: arrays.{name} (shape {spec.shape}, {spec.dtype}, offset {spec.offset}) needs bytes "
                f"{spec.offset:,}…{spec.offset + nbytes:,} of the data, which has {length:,}",
                ("arrays", name),
            )
        ranges.setdefault((spec.offset, nbytes), name)
        arrays[name] = np.frombuffer(body, dtype=dtype, count=count, offset=start + spec.offset).reshape(spec.shape)
    covered = 0
    for (offset, nbytes), name in sorted(ranges.items()):
        if offset < covered:
            raise FrameError(f"frame: arrays.{name} overlaps the array before it", ("arrays", name))
        if offset > covered:
            raise FrameError(f"frame: bytes {covered:,}…{offset:,} of the data belong to no array", ("arrays", name))
        covered = offset + nbytes
    if covered != length:
        raise FrameError(f"frame: {length - covered:,} bytes after the last array belong to no array")
    return fields, arrays


class Readable(Protocol):
    """What read() reads from: http.client's and urllib's responses, an open file, io.BytesIO."""

    def readinto(self, buffer: memoryview, /) -> int | None: ...


def read(stream: Readable, size: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The fields and arrays of a frame of `size` bytes (an answer's Content-Length) read from
    `stream` into one NumPy array, then decoded: the arrays are read-only views of it.

    A client's own cost of a big answer is mostly the fresh memory it lands in: the kernel hands
    a bytes object (what response.read() returns) its 4 KiB pages one fault at a time, where NumPy
    asks Linux for 2 MiB pages for an array this large. A 56 MiB answer (every stage of 8 heads ×
    512 tokens) took 29 ms to first touch as a bytearray and 8 ms as a NumPy array, and reading
    the whole answer 0.75–0.82× as long (bench/api.py). A stream that ends early is a FrameError.
    """
    buffer = np.empty(size, dtype=np.uint8).data
    got = 0
    while got < size:
        n = stream.readinto(buffer[got:])
        if not n:
            raise FrameError(f"frame: the answer ended after {got:,} of its {size:,} bytes")
        got += n
    return decode(buffer.toreadonly())
