"""Each question's right answer against an independent reference: float64 loops written here for the toy
chapters, transformers (with hooks) for the real models. The server computes the answer with the chapter's own
math; these recompute it another way and check the number behind it and the option it falls in."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from app.classroom import questions
from app.classroom.questions import Asked
from app.examples import EXAMPLES
from app.lesson import positions, rnn, scaling

CAT = EXAMPLES["the-cat-ate-its-fish"]


class NoModels:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a toy question asked for the real model ({name})")


def ask(question: str, state: dict[str, str], models: Any = None) -> Asked:
    return questions.QUESTIONS[question].ask(state, models or NoModels())


def loop_softmax(row: list[float]) -> list[float]:
    top = max(x for x in row if x != -math.inf)
    e = [0.0 if x == -math.inf else math.exp(x - top) for x in row]
    return [x / sum(e) for x in e]


def loop_scaled(q: Any, k: Any) -> list[list[float]]:
    q, k = np.asarray(q).tolist(), np.asarray(k).tolist()
    d = len(q[0])
    return [[sum(a * b for a, b in zip(qi, kj, strict=True)) / math.sqrt(d) for kj in k] for qi in q]


def in_range(asked: Asked, value: float) -> int:
    """Which option of a range question holds value, read from the labels' own bounds (the question's bins)."""
    bins = {
        "steps.share": questions.SHARE_BINS,
        "scaling.unscaled": questions.LARGEST_BINS,
        "rnn.fade": questions.FADE_BINS,
        "mistakes.late": questions.ROWSUM_BINS,
        "today.sink": questions.SINK_BINS,
        "tiles.rescale": questions.RESCALE_BINS,
    }
    for table in bins.values():
        if [b[2] for b in table] == asked.options:
            return next(
                i for i, (lo, hi, _) in enumerate(table) if lo <= value < hi or (i == len(table) - 1 and value == hi)
            )
    raise AssertionError(f"no bins for {asked.options}")


@pytest.mark.parametrize("focus", range(5))
@pytest.mark.parametrize("mask", ["full", "causal"])
def test_the_share_of_the_top_scored_word(focus: int, mask: str) -> None:
    state = {"chapter": "steps", "step": "softmax", "example": CAT.id, "focus": str(focus), "mask": mask}
    asked = ask("steps.share", state)
    scaled = loop_scaled(CAT.q, CAT.k)[focus]
    masked = [x if mask == "full" or j <= focus else -math.inf for j, x in enumerate(scaled)]
    top = max(range(5), key=lambda j: (masked[j], -j))
    share = loop_softmax(masked)[top]
    assert asked.value == pytest.approx(share, abs=1e-12)
    assert asked.right == [in_range(asked, share)]
    assert f"“{CAT.tokens[top]}”" in asked.text and f"“{CAT.tokens[focus]}”" in asked.text
    assert f"{share:.3f}" in asked.hides and f"{share:.3f}" not in asked.text + "".join(asked.options)


def test_the_seed_examples_its_and_cat() -> None:
    asked = ask("steps.share", {"chapter": "steps", "step": "mask", "example": CAT.id, "focus": "3"})
    assert asked.options[asked.right[0]] == "more than three quarters" and f"{asked.value:.3f}" == "0.895"


def test_the_share_with_hand_set_numbers() -> None:
    q, k = [[1, 0], [0, 2], [1, 1]], [[2, 0], [0, 1], [1, 1]]
    state = {
        "chapter": "steps",
        "step": "softmax",
        "focus": "1",
        "tokens": json.dumps(["a", "b", "c"]),
        "q": ";".join(",".join(map(str, r)) for r in q),
        "k": ";".join(",".join(map(str, r)) for r in k),
        "v": "1,0;0,1;1,1",
    }
    asked = ask("steps.share", state)
    row = loop_scaled(q, k)[1]
    assert asked.value == pytest.approx(loop_softmax(row)[1], abs=1e-12)  # "b" scores "b" highest (2·1/√2)
    assert "“b” scores “b” highest" in asked.text


def test_not_at_another_step_nor_past_the_sentence() -> None:
    with pytest.raises(questions.NotAskable, match="the class is at 'steps', 'score'"):
        ask("steps.share", {"chapter": "steps", "step": "score", "focus": "3"})
    with pytest.raises(questions.NotAskable, match="past the sentence's 5 tokens"):
        ask("steps.share", {"chapter": "steps", "step": "softmax", "focus": "7"})
    with pytest.raises(questions.NotAskable, match="focus a later word"):
        ask("masks.split", {"chapter": "masks", "step": "causal", "focus": "0"})


@pytest.mark.parametrize("focus", [1, 2, 3, 4])
def test_a_weight_under_the_causal_mask(focus: int) -> None:
    asked = ask("masks.split", {"chapter": "masks", "step": "causal", "example": CAT.id, "focus": str(focus)})
    row = loop_scaled(CAT.q, CAT.k)[focus][: focus + 1]
    w = loop_softmax(row)[0]
    assert asked.value == pytest.approx(w, abs=1e-12)
    assert float(asked.options[asked.right[0]]) == pytest.approx(w, abs=0.005)
    assert len(asked.options) == len(set(asked.options)) >= 3


def test_cat_splits_fifty_fifty() -> None:
    asked = ask("masks.split", {"chapter": "masks", "step": "causal", "example": CAT.id, "focus": "1"})
    assert asked.options == ["0", "0.2", "0.5", "1"] and asked.right == [2]


def test_which_cells_become_zero() -> None:
    asked = ask("masks.zero", {"chapter": "masks", "step": "full", "example": CAT.id})
    assert asked.grid == (list(CAT.tokens), list(CAT.tokens))
    assert asked.right == [i * 5 + j for i in range(5) for j in range(5) if j > i] and asked.value == 10
    assert asked.options[0 * 5 + 4] == "the → fish"


def test_a_row_sum_with_the_mask_after_softmax() -> None:
    for word in range(5):
        asked = ask("mistakes.late", {"chapter": "mistakes", "step": "no-scale", "word": str(word)})
        w = loop_softmax(loop_scaled(CAT.q, CAT.k)[word])
        total = sum(w[: word + 1])
        assert asked.value == pytest.approx(total, abs=1e-12)
        assert asked.right == [in_range(asked, total)]
    last = ask("mistakes.late", {"chapter": "mistakes", "step": "no-scale", "word": "4"})
    assert last.options[last.right[0]] == "exactly 1"


def test_the_largest_weight_without_the_division() -> None:
    for d_k in (2, 64, 512):
        asked = ask("scaling.unscaled", {"chapter": "scaling", "step": "spread", "dk": str(d_k)})
        rng = np.random.default_rng([scaling.SEED, d_k])  # the chapter's draws, in its order (its docstring)
        rng.standard_normal((scaling.SAMPLES, d_k))
        rng.standard_normal((scaling.SAMPLES, d_k))
        query = rng.standard_normal((scaling.QUERIES, d_k))[0].tolist()
        keys = rng.standard_normal((scaling.KEYS, d_k)).tolist()
        raw = [sum(a * b for a, b in zip(query, key, strict=True)) for key in keys]
        top = max(loop_softmax(raw))
        assert asked.value == pytest.approx(top, abs=1e-9)
        assert asked.right == [in_range(asked, top)]


def test_how_much_the_first_word_still_counts() -> None:
    words = ["the", "cat", "ate", "its", "fish"]
    asked = ask("rnn.fade", {"chapter": "rnn", "step": "chain", "words": " ".join(words)})
    w = rnn.weights()
    x = rnn.word_vectors(words, rnn.D_X)

    def last_state(x1: np.ndarray) -> np.ndarray:
        h = np.zeros(rnn.D_H)
        for t in range(len(words)):
            h = np.tanh(w.w_h @ h + w.w_x @ (x1 if t == 0 else x[t]))
        return h

    def first_state(x1: np.ndarray) -> np.ndarray:
        h: np.ndarray = np.tanh(w.w_x @ x1)
        return h

    def spectral(f: Any) -> float:  # the Jacobian by central differences, then its largest singular value
        eps = 1e-6
        cols = [(f(x[0] + eps * e) - f(x[0] - eps * e)) / (2 * eps) for e in np.eye(rnn.D_X)]
        return float(np.linalg.svd(np.stack(cols, axis=1), compute_uv=False)[0])

    ratio = spectral(last_state) / spectral(first_state)
    assert asked.value == pytest.approx(ratio, rel=1e-6)
    assert asked.right == [in_range(asked, ratio)]


def test_numbers_to_learn_and_numbers_after_concat() -> None:
    learned = ask("projections.learned", {"chapter": "projections", "step": "x"})
    assert learned.options[learned.right[0]] == "192" and learned.options == ["24", "64", "192", "768"]
    for heads in (2, 3, 4):
        asked = ask("heads.concat", {"chapter": "heads", "step": "heads", "heads": str(heads)})
        assert asked.options[asked.right[0]] == str(heads * 2)  # each head's z: 2 numbers (d_v)
        assert f"{heads} × 2 = {heads * 2}" in asked.hides


def test_where_a_word_attends_after_reordering() -> None:
    asked = ask("positions.moved", {"chapter": "positions", "step": "plain"})
    words, order = list(positions.DEFAULT_WORDS), list(positions.DEFAULT_ORDER)
    perm = [words[i] for i in order]
    assert asked.options == perm == ["the", "fish", "ate", "its", "cat"]
    w_q, w_k = positions.projections()
    x = rnn.word_vectors(perm, positions.D_MODEL)  # the same words' vectors, in the new order
    q, k = x @ w_q, x @ w_k
    query = next(perm.index(w) for w in perm if f"does “{w}” attend" in asked.text)
    weights = loop_softmax(loop_scaled(q, k)[query])
    assert asked.right == [max(range(5), key=lambda j: weights[j])]
    assert asked.value == pytest.approx(max(weights), abs=1e-12)
    assert perm[asked.right[0]] == "cat"  # the word it attended to, moved: not "fish", now in cat's place


# the real models: transformers as the reference


@pytest.fixture(scope="module")
def models(minilm: Any) -> Any:
    from app.web.quiz import ServerModels

    return ServerModels(SimpleNamespace(state=SimpleNamespace(model_dir=None, backend="numpy")))


def test_the_length_after_the_residual_add(models: Any, minilm: Any, hf_minilm: Any) -> None:
    import torch

    sentence = "The animal didn't cross the street because it was too tired."
    for layer in (0, 3):
        asked = ask("block.residual", {"chapter": "block", "step": "attention", "layer": str(layer)}, models)
        ids = minilm.encode(sentence).ids
        block = hf_minilm.encoder.layer[layer]
        seen: dict[str, Any] = {}

        def keep(module: Any, inputs: Any, output: Any, seen: dict[str, Any] = seen) -> None:
            seen["change"] = output

        hook = block.attention.output.dense.register_forward_hook(keep)
        try:
            with torch.no_grad():
                out = hf_minilm(torch.tensor([ids]), output_hidden_states=True)
        finally:
            hook.remove()
        t = minilm.encode(sentence).tokens.index("it")
        x = out.hidden_states[layer][0, t].double()
        change = seen["change"][0, t].double()
        assert asked.value == pytest.approx(float(torch.linalg.norm(x + change)), abs=1e-4)
        a, b = float(torch.linalg.norm(x)), float(torch.linalg.norm(change))
        assert f"{a:.3f}" in asked.text and f"{b:.3f}" in asked.text
        expected = 0 if asked.value < a else 1
        assert asked.right == [expected]


def test_the_attention_sink(models: Any, smollm: Any, hf_smollm: Any) -> None:
    import torch

    sentence = "The cat ate its fish because it was hungry."
    asked = ask(
        "today.sink", {"chapter": "today", "step": "sink", "sentence": sentence, "layer": "5", "head": "0"}, models
    )
    ids = smollm.tokenizer.encode(sentence).ids
    with torch.no_grad():
        out = hf_smollm(torch.tensor([ids]), output_attentions=True)
    mean = float(out.attentions[5][0, 0, 1:, 0].double().mean())
    assert asked.value == pytest.approx(mean, abs=2e-3)
    assert asked.right == [in_range(asked, mean)]


def test_the_next_token(models: Any, smollm: Any, hf_smollm: Any) -> None:
    import torch

    asked = ask("writing.next", {"chapter": "writing", "step": "write", "prompt": "The capital of France is"}, models)
    ids = smollm.tokenizer.encode("The capital of France is").ids
    with torch.no_grad():
        logits = hf_smollm(torch.tensor([ids])).logits[0, -1].double()
    p = torch.softmax(logits, -1)
    best = int(torch.argmax(p))
    assert asked.options[asked.right[0]] == smollm.tokenizer.piece(best) == " Paris"
    assert asked.value == pytest.approx(float(p[best]), abs=2e-3)
    assert asked.options == sorted(asked.options, key=lambda w: (w.strip().lower(), w))  # no order gives it away


def test_the_rescale_factor_of_attention_in_blocks() -> None:
    with pytest.raises(questions.NotAskable, match="no query's m grows after its first block"):
        ask("tiles.rescale", {"chapter": "tiles", "step": "rescale", "block": "3"})
    for block in (1, 2):
        asked = ask("tiles.rescale", {"chapter": "tiles", "step": "rescale", "block": str(block)})
        scaled = loop_scaled(CAT.q, CAT.k)
        # the query whose running maximum grows most from one block to the next (the chapter's own pick)
        best = None
        for t in range(1, math.ceil(5 / block)):
            for i in range(5):
                before = max(scaled[i][: t * block])
                after = max(before, *scaled[i][t * block : (t + 1) * block])
                if after > before and (best is None or after - before > best[2]):
                    best = (i, t, after - before, before, after)
        assert best is not None
        i, t, _, before, after = best
        alpha = math.exp(before - after)
        assert asked.value == pytest.approx(alpha, abs=1e-12)
        assert f"Block {t + 1} brings “{CAT.tokens[i]}”" in asked.text
        assert asked.right == [in_range(asked, alpha)]
    assert asked.options[-1] == "exactly 1"
