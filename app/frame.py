"""The compact binary encoding of the API: a "frame" of named float64 arrays.

Large attention tables are slow as JSON text (~20 bytes and a float parse per number), so a
client may send and receive this instead, media type FRAME_MEDIA_TYPE:

    bytes 0-3   b"ATF1"
    bytes 4-7   H, the header length, uint32 little-endian
    bytes 8-    the header: UTF-8 JSON, space-padded so the data starts 8-byte aligned
    then        the arrays, little-endian float64, C order, back to back

The header holds the request's or response's other fields as in JSON, plus
"arrays": {name: {"shape": [...], "offset": bytes from the start of the data}}.
In a response −∞ (hidden cells of "masked") stays −∞; JSON writes it as null.
A browser reads an array with new Float64Array(buffer, 8 + H + offset, count).
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import numpy as np

FRAME_MEDIA_TYPE = "application/x-attention-frame"
MAGIC = b"ATF1"
_PREFIX = struct.Struct("<4sI")


class FrameError(ValueError):
    """A frame that cannot be read; the message says why."""


def header(fields: dict[str, Any], shapes: dict[str, tuple[int, ...]], same_as: dict[str, str]) -> memoryview:
    """The prefix and header of a frame whose arrays come in the order of shapes.

    An array named in same_as takes no bytes of its own: it points at the other array's.
    """
    offset, layout = 0, {}
    for name, shape in shapes.items():
        if name not in same_as:
            layout[name] = {"shape": list(shape), "offset": offset}
            offset += math.prod(shape) * 8
    for name, other in same_as.items():
        layout[name] = {"shape": list(shapes[name]), "offset": layout[other]["offset"]}
    text = json.dumps({**fields, "arrays": layout}, separators=(",", ":")).encode()
    text += b" " * (-(_PREFIX.size + len(text)) % 8)
    return memoryview(_PREFIX.pack(MAGIC, len(text)) + text)


def data(a: np.ndarray) -> memoryview:
    """An array's bytes as a frame holds them (no copy for a C-ordered float64 array)."""
    return memoryview(np.ascontiguousarray(a, dtype="<f8").data).cast("B")


def parts(fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> list[memoryview]:
    """A frame as a list of buffers, the arrays' own memory among them: nothing is copied.

    An array that is the very same object as an earlier one (masked is scaled when nothing is
    hidden) is sent once, and both names point at it.
    """
    first: dict[int, str] = {}
    same_as: dict[str, str] = {}
    for name, a in arrays.items():
        if id(a) in first:
            same_as[name] = first[id(a)]
        else:
            first[id(a)] = name
    shapes = {name: a.shape for name, a in arrays.items()}
    return [header(fields, shapes, same_as), *(data(a) for name, a in arrays.items() if name not in same_as)]


def encode(fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    """One frame, as bytes."""
    return b"".join(parts(fields, arrays))


def decode(data: bytes | memoryview) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The fields and arrays of a frame (arrays are read-only views of data)."""
    if len(data) < _PREFIX.size:
        raise FrameError("frame: shorter than its 8-byte prefix")
    magic, size = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise FrameError(f"frame: must start with {MAGIC!r}")
    start = _PREFIX.size + size
    if start > len(data):
        raise FrameError("frame: header length runs past the end of the body")
    try:
        header = json.loads(bytes(data[_PREFIX.size : start]))
    except ValueError as e:
        raise FrameError(f"frame: header is not valid JSON ({e})") from None
    if not isinstance(header, dict) or not isinstance(header.get("arrays", {}), dict):
        raise FrameError("frame: header must be a JSON object with an 'arrays' object")
    arrays = {}
    for name, spec in header.pop("arrays", {}).items():
        try:
            shape = tuple(int(s) for s in spec["shape"])
            offset = int(spec["offset"])
        except (TypeError, KeyError, ValueError):
            raise FrameError(f"frame: arrays.{name} needs a 'shape' list and an 'offset'") from None
        count = math.prod(shape)
        if any(s < 0 for s in shape) or offset < 0 or offset % 8 or start + offset + 8 * count > len(data):
            raise FrameError(f"frame: arrays.{name} (shape {list(shape)}, offset {offset}) lies outside the body")
        arrays[name] = np.frombuffer(data, dtype="<f8", count=count, offset=start + offset).reshape(shape)
    return header, arrays
