"""The class questions in every language (issue 43): the server sends each question's sentences as catalog
messages with their values, and every page writes them in its own language (static/js/classroom/quizwords.js,
run here in node on the real catalogs).

- In English the page writes exactly the server's text, options, grid and explanation (the class report keeps
  those): the messages and the server's sentences cannot drift apart.
- In Spanish, Chinese and Arabic every question is written in that language: the example's words as that
  language's table shows them, numbers with its decimal sign; nothing left of a message's {placeholders}.
- What every page receives before the reveal still holds no answer, in no language.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from app.classroom import questions
from app.classroom.questions import Asked, SentenceAttention

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("quiz_words.mjs")
pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (ROOT / "node_modules" / "intl-messageformat").is_dir(),
    reason="node and npm's intl-messageformat are needed (npm ci)",
)
CAT = "the-cat-ate-its-fish"


class FakeModels:
    """The real models' shapes with made-up numbers: these tests are about words, not the models' math."""

    tokens: ClassVar[list[str]] = ["[CLS]", "the", "animal", "was", "tired", "[SEP]"]

    def sentence(self, sentence: str, model: str | None, layer: int | str, head: int | str, mask: str) -> Any:
        n = len(self.tokens)
        scores = np.arange(n * n, dtype=float).reshape(n, n) % 7 / 3
        if mask == "causal":
            scores[np.triu_indices(n, 1)] = -np.inf
        e = np.exp(scores - scores.max(1, keepdims=True))
        return SentenceAttention(self.tokens, scores, e / e.sum(1, keepdims=True))

    def block(self, sentence: str, layer: int) -> tuple[list[str], dict[str, np.ndarray]]:
        n = len(self.tokens)
        return self.tokens, {"input": np.full(n, 15.25), "attention": np.full(n, 3.5), "residual": np.full(n, 16.125)}

    def today(self, sentence: str, layer: int, head: int) -> tuple[list[str], np.ndarray]:
        w = np.tril(np.ones((4, 4)))
        w[1:, 0] = 4
        return ["The", " cat", " ate", " its"], w / w.sum(1, keepdims=True)

    def next_tokens(self, prompt: str, written: int, sampling: Any) -> list[tuple[str, float]]:
        return [(" Paris", 0.4567), (" the", 0.2), (" a", 0.1), ("\n", 0.05), (" Lyon", 0.01)]

    def lens(self, prompt: str) -> tuple[int, str, int]:
        return 12, " Paris", 30

    def next_word_without(self, prompt: str, heads: list[tuple[int, int]]) -> tuple[str, float, float]:
        drop = {(0, 6): 0.05, (23, 4): 0.2, (27, 1): 0.01}[heads[0]]
        return " Paris", 0.4567, 0.4567 - drop


# each question on a view it is asked about: its chapter's defaults, and a typed sentence where it reads one
VIEWS: list[tuple[str, dict[str, str]]] = [
    ("rnn.fade", {"chapter": "rnn", "step": "chain"}),
    ("projections.learned", {"chapter": "projections", "step": "q"}),
    ("steps.share", {"chapter": "steps", "step": "softmax", "example": CAT, "focus": "3", "mask": "causal"}),
    ("steps.share", {"chapter": "steps", "step": "softmax", "sentence": "the animal was tired", "focus": "2"}),
    ("scaling.unscaled", {"chapter": "scaling", "step": "spread", "dk": "1024"}),
    ("masks.zero", {"chapter": "masks", "step": "full", "example": CAT}),
    ("masks.split", {"chapter": "masks", "step": "causal", "example": CAT, "focus": "3"}),
    ("heads.concat", {"chapter": "heads", "step": "heads"}),
    ("positions.moved", {"chapter": "positions", "step": "plain"}),
    ("block.residual", {"chapter": "block", "step": "attention"}),
    ("mistakes.late", {"chapter": "mistakes", "step": "no-scale"}),
    ("mistakes.late", {"chapter": "mistakes", "step": "no-scale", "word": "4"}),
    ("writing.next", {"chapter": "writing", "step": "write", "n": "3"}),
    ("today.sink", {"chapter": "today", "step": "sink"}),
    ("tiles.rescale", {"chapter": "tiles", "step": "rescale"}),
    ("tiles.rescale", {"chapter": "tiles", "step": "rescale", "block": "1", "word": "4", "at": "rescale:5"}),
    ("inside.head-off", {"chapter": "inside", "step": "rollout"}),
    ("inside.lens", {"chapter": "inside", "step": "off"}),
]


def asked_all() -> list[tuple[str, Asked]]:
    return [(qid, questions.QUESTIONS[qid].ask(state, FakeModels())) for qid, state in VIEWS]


def page_words(asks: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """What the page writes for each (language, quiz as the page receives it)."""
    body = json.dumps([{"lang": lang, "quiz": quiz} for lang, quiz in asks])
    done = subprocess.run(["node", str(SCRIPT)], input=body, capture_output=True, text=True, timeout=60, check=True)
    out: list[dict[str, Any]] = json.loads(done.stdout)
    return out


def revealed(asked: Asked) -> dict[str, Any]:
    """The quiz as every page receives it after the reveal (app.classroom.quiz.reveal)."""
    return {**asked.public(), "answer": asked.answer()}


@pytest.fixture(scope="module")
def written() -> dict[str, list[tuple[str, Asked, dict[str, Any]]]]:
    """Every question in every language, as a page writes it: lang → [(question, asked, page's words)]."""
    asked = asked_all()
    langs = ["en", "es", "zh", "ar"]
    words = page_words([(lang, revealed(a)) for lang in langs for _, a in asked])
    out: dict[str, list[tuple[str, Asked, dict[str, Any]]]] = {}
    for i, lang in enumerate(langs):
        out[lang] = [(qid, a, words[i * len(asked) + j]) for j, (qid, a) in enumerate(asked)]
    return out


def test_the_english_page_writes_the_servers_text(written: dict[str, list[tuple[str, Asked, dict[str, Any]]]]) -> None:
    for qid, asked, page in written["en"]:
        assert page["text"] == asked.text, qid
        assert page["options"] == asked.options, qid
        assert page["explain"] == asked.explain, qid
        grid = {"rows": asked.grid[0], "cols": asked.grid[1]} if asked.grid else None
        assert page["grid"] == grid, qid


def test_every_language_writes_every_question(written: dict[str, list[tuple[str, Asked, dict[str, Any]]]]) -> None:
    for lang in ("es", "zh", "ar"):
        for qid, asked, page in written[lang]:
            for part in (page["text"], page["explain"], *page["options"]):
                assert part and not re.search(r"[{}]", part), (lang, qid, part)
            assert page["text"] != asked.text and page["explain"] != asked.explain, (lang, qid)
            assert len(page["options"]) == len(asked.options), (lang, qid)
            if asked.kind == "range":  # a range's labels are the language's own
                assert page["options"] != asked.options, (lang, qid)
    script = {"zh": r"[\u4e00-\u9fff]", "ar": r"[\u0600-\u06ff]"}
    for lang, pattern in script.items():
        for qid, _, page in written[lang]:
            assert re.search(pattern, page["text"]) and re.search(pattern, page["explain"]), (lang, qid)


def by_question(rows: list[tuple[str, Asked, dict[str, Any]]], qid: str, n: int = 0) -> dict[str, Any]:
    return [page for q, _, page in rows if q == qid][n]


def test_the_examples_words_and_the_numbers_are_the_languages(
    written: dict[str, list[tuple[str, Asked, dict[str, Any]]]],
) -> None:
    es, zh, ar = written["es"], written["zh"], written["ar"]
    # the example's words as each language's table shows them: Spanish and Chinese carry it, Arabic keeps English
    assert by_question(es, "steps.share")["text"].startswith("«su» da la puntuación más alta a «")
    assert "“它的”" in by_question(zh, "steps.share")["text"]
    assert "«\u2068its\u2069»" in by_question(ar, "steps.share")["text"]
    # a typed sentence's words stay as typed (the models read English)
    assert (
        "«animal»" in by_question(es, "steps.share", 1)["text"] or "«was»" in by_question(es, "steps.share", 1)["text"]
    )
    # a cell question's grid and labels in the example's words
    grid = by_question(es, "masks.zero")["grid"]
    assert grid["rows"] == ["el", "gato", "comió", "su", "pescado"] == grid["cols"]
    assert by_question(es, "masks.zero")["options"][4] == "el → pescado"
    assert by_question(zh, "masks.zero")["grid"]["rows"] == ["这只", "猫", "吃了", "它的", "鱼"]
    assert by_question(ar, "masks.zero")["grid"]["rows"] == ["the", "cat", "ate", "its", "fish"]
    # numbers: Spanish writes a decimal comma, grouped thousands as Spanish groups them; a percentage its way
    assert re.search(r"\d,\d{3}", by_question(es, "steps.share")["explain"])
    assert "d_k = 1024" in by_question(es, "scaling.unscaled")["text"]
    assert "45,7\u00a0%" in by_question(es, "writing.next")["explain"]
    assert by_question(es, "block.residual")["options"] == [
        "menos de 15,250",
        "entre 15,250 y 18,750",
        "exactamente 18,750",
        "más de 18,750",
    ]
    # plurals by the language's rules: Arabic's "two" form
    assert "كلمتين" in by_question(ar, "masks.split")["explain"] or "كلمات" in by_question(ar, "masks.split")["explain"]


def test_no_answer_before_the_reveal_in_any_language() -> None:
    for qid, asked in asked_all():
        public = asked.public()
        assert set(public) <= {"kind", "text", "options", "grid", "say"}, qid
        assert set(public["say"]) <= {"text", "options", "grid"}, qid
        shown = json.dumps(public, ensure_ascii=False)
        for hidden in asked.hides:
            assert hidden not in shown, (qid, hidden)
        value = asked.value
        assert not re.search(rf'"num": {re.escape(repr(value))}[,}}]', shown), (qid, value)


def test_every_question_is_asked_here_and_has_its_words() -> None:
    """A question added to app.classroom.questions without its messages would reach every page in English."""
    assert {qid for qid, _ in VIEWS} == set(questions.QUESTIONS)
    for qid, asked in asked_all():
        assert asked.words is not None, qid
