"""The hand-set mode of POST /api/attention as plain functions: q, k and v in, every stage out.

Shared by the API (app.api, which encodes the answer as JSON, a frame or CSV) and the notebook
(app.notebook.numbers, which draws it), so both refuse the same input with the same words:

  compute(inp, backend, mistake)  the answer's fields and arrays (q, k, v and the stages), checked
  check_scores(scores, q, k)      a 422 naming q when a score overflowed float64
  bounded(q, k)                   whether no score can overflow (known before computing them)
  fields(inp)                     the answer's fields besides the arrays

The arithmetic is app.attention's (or app.lesson.mistakes' for a classic mistake); this module
only checks what comes out, so that no answer ever carries ±∞ or NaN where a number should be.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from app.attention import Backend, Mistake, Stages, attention
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
    if not np.isfinite(s.weights).all():  # a mistake's softmax of overflowing scaled scores
        raise InputError("q", "q·k scores are too large for the softmax in float64: make q or k smaller")
    if not np.isfinite(s.output).all():
        raise InputError("v", "weights·v overflows float64 (beyond ±1.8e308): make v smaller")


def check_scores(scores: np.ndarray, q: np.ndarray, k: np.ndarray) -> None:
    """A 422 when a score overflowed. Many scores (> _READ_CELLS) are read only when bounded() cannot
    rule it out; a few are read directly: quicker than the two norms."""
    if scores.size > _READ_CELLS and bounded(q, k):
        return
    if not np.isfinite(scores).all():  # (scaled and weights are finite whenever scores are)
        raise InputError("q", "q·k scores overflow float64 (beyond ±1.8e308): make q or k smaller")


def bounded(q: np.ndarray, k: np.ndarray) -> bool:
    """Whether no score q·k can overflow, by Cauchy–Schwarz |q·k| ≤ ‖q‖‖k‖: the longest query times
    the longest key stays far from float64's end. Known before any score is computed."""
    with np.errstate(over="ignore", invalid="ignore"):
        bound = math.sqrt(float(np.einsum("...i,...i->...", q, q).max())) * math.sqrt(
            float(np.einsum("...i,...i->...", k, k).max())
        )
    return bound < 1e300  # (false for inf and nan)
