"""The chapter inside's class questions against transformers: the logit lens from output_hidden_states →
model.model.norm → lm_head, and heads switched off by a forward pre-hook on o_proj zeroing their 64 columns."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from app.classroom import questions

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def models(smollm: Any) -> Any:
    from app.web.quiz import ServerModels

    return ServerModels(SimpleNamespace(state=SimpleNamespace(model_dir=None, backend="numpy")))


def _probabilities(hf: Any, ids: list[int], off: tuple[int, int] | None = None) -> np.ndarray:
    """transformers' next-token probabilities (V,) float64, with head `off` = (layer, head) switched off."""
    import torch

    def zero(_: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
        x = args[0].clone()
        assert off is not None
        x[..., off[1] * 64 : (off[1] + 1) * 64] = 0
        return (x, *args[1:])

    hook = hf.model.layers[off[0]].self_attn.o_proj.register_forward_pre_hook(zero) if off else None
    try:
        with torch.no_grad():
            logits = hf(torch.tensor([ids])).logits[0, -1].double()
    finally:
        if hook is not None:
            hook.remove()
    return np.asarray(torch.softmax(logits, -1).numpy())


def test_which_head_takes_the_most_from_the_next_word(models: Any, smollm: Any, hf_smollm: Any) -> None:
    state = {"chapter": "inside", "step": "flow"}
    asked = questions.QUESTIONS["inside.head-off"].ask(state, models)
    ids = smollm.tokenizer.encode(PROMPT).ids
    p = _probabilities(hf_smollm, ids)
    best = int(np.argmax(p))
    drops = [p[best] - _probabilities(hf_smollm, ids, head)[best] for head in questions.CONTENDERS]
    assert asked.kind == "word" and asked.options == ["layer 0, head 6", "layer 23, head 4", "layer 27, head 1"]
    assert asked.right == [int(np.argmax(drops))] == [1]  # layer 23's head 4 (0.773 → 0.141)
    assert asked.value == pytest.approx(max(drops), abs=1e-5)
    assert "“ Paris”" in asked.text and f"{100 * p[best]:.1f}%" in asked.explain
    assert all(h in asked.explain for h in asked.hides) and len(asked.hides) == 3
    assert asked.public().keys() == {"kind", "text", "options", "say"}  # say: its messages, the reveal's not yet
    assert "explain" not in asked.public()["say"]


def test_the_first_layer_with_the_answer_on_top(models: Any, smollm: Any, hf_smollm: Any) -> None:
    import torch

    asked = questions.QUESTIONS["inside.lens"].ask({"chapter": "inside", "step": "off", "prompt": PROMPT}, models)
    ids = smollm.tokenizer.encode(PROMPT).ids
    with torch.no_grad():
        hidden = hf_smollm(torch.tensor([ids]), output_hidden_states=True).hidden_states  # 31
        tops = [
            int(hf_smollm.lm_head(h[0, -1] if i == len(hidden) - 1 else hf_smollm.model.norm(h[0, -1])).argmax())
            for i, h in enumerate(hidden)
        ]
    first = tops.index(tops[-1]) - 1  # −1: the embedding
    assert asked.value == first
    band = 0 if first < 10 else 1 if first < 20 else 2 if first < 28 else 3
    assert asked.right == [band], first
    assert asked.options[3] == "only at the very end: layer 28 or 29"
    assert smollm.tokenizer.piece(tops[-1]).strip() in asked.text


def test_no_question_on_an_empty_prompt_or_at_another_step(models: Any) -> None:
    with pytest.raises(questions.NotAskable, match="prompt is empty"):
        questions.QUESTIONS["inside.lens"].ask({"chapter": "inside", "step": "off", "prompt": " "}, models)
    with pytest.raises(questions.NotAskable, match="step 'off' or 'lens'"):
        questions.QUESTIONS["inside.lens"].ask({"chapter": "inside", "step": "rollout"}, models)
    assert [q.id for q in questions.at("inside", "rollout")] == ["inside.head-off"]
    assert [q.id for q in questions.at("inside", "lens")] == ["inside.lens"]  # the page withholds the guesses
