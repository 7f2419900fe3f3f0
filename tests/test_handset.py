"""app.handset: the hand-set mode's arithmetic checked, shared by the API and the notebook."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.attention import Stages, attention
from app.errors import InputError
from app.handset import check_finite, check_scores, compute
from app.notebook.numbers import hand_set
from app.schemas import AttentionInput

Q = np.array([[1.5, 0], [0, 1.2], [1.2, 0]])
K = np.array([[0, 0], [3, 0], [0, 3]])
V = np.array([[0, 0], [1, 0], [0, 0.5]])


def test_compute_answers_every_stage_against_a_loop() -> None:
    fields, arrays = compute(AttentionInput(["a", "b", "c"], Q, K, V, "causal"), "numpy")
    assert fields == {"tokens": ["a", "b", "c"], "mask": "causal", "d_k": 2}
    assert list(arrays) == ["q", "k", "v", "scores", "scaled", "masked", "weights", "output"]
    for i in range(3):  # a float64 loop, row by row
        scores = [sum(Q[i, d] * K[j, d] for d in range(2)) / math.sqrt(2) for j in range(i + 1)]
        e = [math.exp(s - max(scores)) for s in scores]
        w = [x / sum(e) for x in e] + [0.0] * (2 - i)
        assert arrays["weights"][i].tolist() == pytest.approx(w, abs=1e-15)
        assert arrays["output"][i].tolist() == pytest.approx([sum(w[j] * V[j, c] for j in range(3)) for c in range(2)])


def test_a_mistake_is_echoed_and_computed() -> None:
    fields, arrays = compute(AttentionInput(["a", "b", "c"], Q, K, V, "full"), "numpy", "no-scale")
    assert fields["mistake"] == "no-scale"
    np.testing.assert_array_equal(arrays["scaled"], arrays["scores"])


def test_an_overflowing_output_is_refused_not_sent() -> None:
    # weights are a convex mix, so only rounding at the edge of float64 could overflow; the guard stays
    ok = attention(np.ones((2, 1)), np.ones((2, 1)), np.ones((2, 1)))
    broken = Stages(ok.scores, ok.scaled, ok.masked, ok.weights, np.full((2, 1), math.inf))
    with pytest.raises(InputError, match="overflows float64") as e:
        check_finite(broken, np.ones((2, 1)), np.ones((2, 1)))
    assert e.value.field == "v"


def test_overflowing_scores_are_refused_past_the_cauchy_schwarz_shortcut() -> None:
    # the shortcut skips the n × n check only when ‖q‖‖k‖ cannot overflow; here it can, and does
    big = np.full((2, 2), 1e154)
    with np.errstate(over="ignore"):
        scores = big @ big.T
    assert not np.isfinite(scores).all()
    with pytest.raises(InputError, match="overflow float64"):
        check_scores(scores, big, big)
    check_scores(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)))  # finite and small: no error


def test_the_notebook_refuses_what_the_api_refuses() -> None:
    big = [[1e200, 0], [0, 1]]
    with pytest.raises(InputError, match="scores overflow float64") as e:
        hand_set(None, ["a", "b"], big, big, [[1], [2]]).result("full")
    assert e.value.field == "q"


def test_overflowing_scores_of_a_long_sequence_are_refused_through_the_bound() -> None:
    # past handset._READ_CELLS scores the Cauchy–Schwarz bound decides whether to read them
    big = np.full((80, 2), 1e154)
    with np.errstate(over="ignore"):
        scores = big @ big.T
    assert scores.size > 4096 and not np.isfinite(scores).all()
    with pytest.raises(InputError, match="overflow float64"):
        check_scores(scores, big, big)
    small = np.ones((80, 2))
    check_scores(small @ small.T, small, small)  # the bound alone clears these
