"""The hand-set mode of POST /api/attention as plain functions: q, k and v in, every stage out.

Shared by the API (app.web.attention, which encodes the answer as JSON, a frame or CSV) and the notebook
(app.notebook.numbers, which draws it), so both refuse the same input with the same words:

  compute(inp, backend, mistake)  the answer's fields and arrays (q, k, v and the stages), checked
  check_scores(scores, q, k)      a 422 naming q when a score overflowed float64
  bounded(q, k)                   whether no score can overflow (known before computing them)
  fields(inp)                     the answer's fields besides the arrays
  stages_into(q, k, v, mask, take) app.attention's NumPy stages, each written into memory from take()
  SCRATCH                         the memory a streamed frame's stages are written into, kept between answers

The arithmetic is app.attention's (or app.lesson.mistakes' for a classic mistake); this module
only checks what comes out, so that no answer ever carries ±∞ or NaN where a number should be.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from app.attention import Backend, Mask, Mistake, Stages, all_finite, attention, visible
from app.errors import InputError
from app.lesson.mistakes import with_mistake
from app.schemas import AttentionInput

_READ_CELLS = 4096  # up to this many scores, checking each is quicker than the Cauchy–Schwarz bound


def compute(
    inp: AttentionInput, backend: Backend, mistake: Mistake | None = None
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Every stage of attention on the checked input (with a mistake, if named): (fields, arrays)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if mistake is None:
            computed = attention(inp.q, inp.k, inp.v, inp.mask, backend)
        else:
            computed = with_mistake(inp.q, inp.k, inp.v, inp.mask, mistake)
    check_finite(computed, inp.q, inp.k)
    answer_fields = fields(inp) | ({"mistake": mistake} if mistake else {})
    return answer_fields, {"q": inp.q, "k": inp.k, "v": inp.v, **computed.as_dict()}


def fields(inp: AttentionInput) -> dict[str, Any]:
    """The answer's fields besides the arrays."""
    return {"tokens": inp.tokens, "mask": inp.mask, "d_k": int(inp.q.shape[-1])}


def check_finite(s: Stages, q: np.ndarray, k: np.ndarray) -> None:
    """A 422 naming the input to shrink when a stage overflowed float64."""
    check_scores(s.scores, q, k)
    if not all_finite(s.weights):  # a mistake's softmax of overflowing scaled scores
        raise InputError("q", "q·k scores are too large for the softmax in float64: make q or k smaller")
    if not all_finite(s.output):
        raise InputError("v", "weights·v overflows float64 (beyond ±1.8e308): make v smaller")


def check_scores(scores: np.ndarray, q: np.ndarray, k: np.ndarray) -> None:
    """A 422 when a score overflowed. Many scores (> _READ_CELLS) are read only when bounded() cannot
    rule it out; a few are read directly: quicker than the two norms."""
    if scores.size > _READ_CELLS and bounded(q, k):
        return
    if not all_finite(scores):  # (scaled and weights are finite whenever scores are)
        raise InputError("q", "q·k scores overflow float64 (beyond ±1.8e308): make q or k smaller")


def bounded(q: np.ndarray, k: np.ndarray) -> bool:
    """Whether no score q·k can overflow, by Cauchy–Schwarz |q·k| ≤ ‖q‖‖k‖: the longest query times
    the longest key stays far from float64's end. Known before any score is computed."""
    with np.errstate(over="ignore", invalid="ignore"):
        bound = math.sqrt(float(np.einsum("...i,...i->...", q, q).max())) * math.sqrt(
            float(np.einsum("...i,...i->...", k, k).max())
        )
    return bound < 1e300  # (false for inf and nan)


def stages_into(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: Mask,
    take: Callable[[tuple[int, ...]], np.ndarray],
    heads: int = 0,
) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """app.attention's NumPy stages of checked float64 q, k, v, each written into an array from take(shape),
    as (name, stage, piece): piece is the part of stage just written, `heads` heads of a 3-D input at a
    time (0, or a 2-D input: the whole stage at once), so that each part can leave while the next is made.

    The very ufuncs app.attention._stages_numpy calls, on the same operands, so every stage is the same
    to the bit (a stage's cells of one head never depend on another head's: each is its own matrix
    product and its own rows); only where each result lies differs: memory used before has its pages
    already, a fresh 16 MiB array must fault them in (~20% of the stages' time at n = 512). As there, a
    stage is never changed after it has been yielded."""
    n, d_k = q.shape[-2], q.shape[-1]
    cells = q.shape[:-1] + k.shape[-2:-1]  # (..., n, n)
    h = q.shape[0] if q.ndim == 3 else 1
    step = heads if q.ndim == 3 and 0 < heads < h else h
    parts = [slice(i, i + step) for i in range(0, h, step)] if q.ndim == 3 else [slice(None)]
    k_t = np.swapaxes(k, -1, -2)  # (..., d_k, n)

    scores = take(cells)  # q kᵀ
    for p in parts:
        yield "scores", scores, np.matmul(q[p], k_t[p], out=scores[p])
    scaled = take(cells)  # scores / √d_k
    for p in parts:
        yield "scaled", scaled, np.divide(scores[p], math.sqrt(d_k), out=scaled[p])
    masked = scaled
    if mask == "causal":
        masked = take(cells)  # −∞ where hidden: np.where(visible(n), scaled, −∞)
        seen = visible(n)
    for p in parts:
        if mask == "causal":
            masked[p].fill(-np.inf)
            np.copyto(masked[p], scaled[p], where=seen)
        yield "masked", masked, masked[p]
    weights = take(cells)  # softmax by row, shifted by the row's maximum as there
    for p in parts:
        w = np.subtract(masked[p], masked[p].max(axis=-1, keepdims=True), out=weights[p])
        np.exp(w, out=w)
        yield "weights", weights, np.divide(w, w.sum(axis=-1, keepdims=True), out=w)
    output = take(q.shape[:-1] + v.shape[-1:])  # weights v: (..., n, d_v)
    for p in parts:
        yield "output", output, np.matmul(weights[p], v[p], out=output[p])


def _refs(blocks: list[np.ndarray], i: int) -> int:
    return sys.getrefcount(blocks[i])


_UNUSED = _refs([np.empty(1)], 0)  # the count of an array that only the list refers to


class Scratch:
    """Memory kept from one answer to the next: the stages a streamed frame writes in place
    (stages_into) and the frame bodies read into it. A fresh array of megabytes must fault in its
    pages (zeroed by the kernel) as it is first written; memory used before has them already.

    A block is handed out again only once nothing but this pool refers to it: no array, view or
    memoryview of it is left (the transport keeps a memoryview of every buffer it has still to
    write), so an answer never sees its bytes change. Up to `limit` bytes are kept, in blocks of at
    least `smallest` bytes (smaller arrays are plain ones); a block unused for `keep_s` seconds is let
    go at the next take, so a server that has stopped answering big frames gives its memory back."""

    def __init__(self, limit: int, keep_s: float = 60.0, smallest: int = 1 << 20) -> None:
        self.limit, self.keep_s, self.smallest = limit, keep_s, smallest
        self._blocks: list[np.ndarray] = []  # uint8, each a multiple of `smallest` bytes
        self._used: list[float] = []
        self._lock = threading.Lock()

    def take(self, shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
        """An array of this shape and type that nothing else refers to (its values are left over)."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < self.smallest:
            return np.empty(shape, dtype)
        now = time.monotonic()
        with self._lock:
            best = None  # the smallest unused block that fits
            for i in range(len(self._blocks) - 1, -1, -1):
                if _refs(self._blocks, i) != _UNUSED:
                    continue
                if self._blocks[i].nbytes >= nbytes and (best is None or self._blocks[i].nbytes < best.nbytes):
                    best = self._blocks[i]
                elif now - self._used[i] > self.keep_s:
                    del self._blocks[i], self._used[i]
            if best is None:
                best = np.empty(-(-nbytes // self.smallest) * self.smallest, np.uint8)
                if sum(b.nbytes for b in self._blocks) + best.nbytes <= self.limit:
                    self._blocks.append(best)
                    self._used.append(now)
            else:
                self._used[next(i for i, b in enumerate(self._blocks) if b is best)] = now
            out: np.ndarray = best[:nbytes].view(dtype).reshape(shape)
            return out


# Two answers stream at once (limits.COMPUTE_SLOTS), each with its body and up to four n × n stages
# and an output: at 512 tokens × 8 heads, 2 × (6 + 4 × 16 + 2) MiB
SCRATCH = Scratch(limit=144 << 20)
