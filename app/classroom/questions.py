"""The class's questions: one or more per chapter, each answered by reasoning, not by reading the screen.

Every question is asked about the room's current view (its chapter, step and parameters: the
state the presenter's page put in the room) and its right answer is computed HERE, from the same
numbers the chapter shows, when the question is asked. The page never sends an answer; the server
keeps it until the reveal (app.classroom.quiz).

A question is asked at a step where the numbers that give its answer away are not on any screen:
the attention chapters hold the weights back while a question is open (static/js/classroom/
withhold.js), and the other chapters either ask before the step that shows the answer or leave
those numbers out while `ctx.withheld` (static/js/chapters/*.js, each step's `quiz`).

Kinds, and what a vote's `choice` (always an integer) means:

  word     pick one of the sentence's words             choice = the option's index
  range    pick a range that holds the number            choice = the range's index
  number   pick one of a few numbers                      choice = the number's index
  cell     tap one cell of a table (rows × cols)          choice = row · cols + col

Each question's `make(view, models)` returns an Asked: the text, the options, the right option(s),
the number behind the answer and the sentence the reveal shows. `hides` lists the strings that
would give the answer away: no screen shows them before the reveal (tests/browser check).

Every page writes a question in its own language: an Asked also carries its sentences as catalog
messages with their values (`words`: Say, Num, Word below), beside the English text the class
report keeps.

Adding a question: a function here (the chapter's numbers from its math module), its messages in
the catalogs (static/i18n/<lang>.json, "quiz.<id>.…", the English one word for word the text it
builds), one line in QUESTIONS, and `quiz: "<id>"` on the step in the chapter's module
(static/js/chapters/<id>.js).

References: the chapters' math (app.attention, app.examples, app.lesson.*, app.model.today,
app.model.generate), which this module calls and never re-implements. No web imports.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from app.attention import Mask, attention
from app.examples import DEFAULT_EXAMPLE, EXAMPLES
from app.lesson import mistakes, multihead, positions, projections, rnn, scaling, tiles

Kind = Literal["word", "range", "number", "cell"]
MAX_CELL_SIDE = 8  # a cell question's table: at most 8 × 8 cells on a phone


class NotAskable(ValueError):
    """This question can't be asked about this view (the message says why, for the teacher)."""


@dataclass(frozen=True)
class SentenceAttention:
    """One head (or a mean of heads) of the real model on a sentence, as the page's table shows it."""

    tokens: list[str]
    masked: np.ndarray  # (n, n) scaled scores, −∞ where the mask hides a key
    weights: np.ndarray  # (n, n)
    example: str | None = None  # the built-in example whose words these are (None: a sentence, hand-set words)


class Models(Protocol):
    """What the questions on the real models need; the web layer provides it (app.web.quiz ServerModels)."""

    def sentence(
        self, sentence: str, model: str | None, layer: int | str, head: int | str, mask: Mask
    ) -> SentenceAttention:
        """The attention of a typed sentence, as the five steps show it."""

    def block(self, sentence: str, layer: int) -> tuple[list[str], dict[str, np.ndarray]]:
        """The block chapter's tokens and each point's per-token length (name → (n,))."""

    def today(self, sentence: str, layer: int, head: int) -> tuple[list[str], np.ndarray]:
        """The decoder's tokens and one head's causal weights (n, n) (the chapter on today's models)."""

    def next_tokens(self, prompt: str, written: int, sampling: tuple[float, int, float]) -> list[tuple[str, float]]:
        """The decoder's ten likeliest tokens after the prompt and the `written` tokens it writes with `sampling`
        (temperature, top-k, top-p; the Write chapter's fixed draw): (token, p), likeliest first; [] when the
        writing ends before."""

    def lens(self, prompt: str) -> tuple[int, str, int]:
        """The decoder's logit lens after the prompt (chapter inside): the first layer (−1: the embedding) whose top
        guess is the model's final next token, that token, and the model's number of layers."""

    def next_word_without(self, prompt: str, heads: list[tuple[int, int]]) -> tuple[str, float, float]:
        """The decoder's likeliest next token after the prompt, its probability, and its probability with `heads`
        ([(layer, head)]) switched off (chapter inside)."""


# ---- the words of a question, in every language -----------------------------------------------------
#
# The server computes a question once, for every page of the room; each page writes it in its own language.
# So a question also carries its sentences as catalog messages (static/i18n/<lang>.json, keys "quiz.…") and
# their values: words of the view and numbers, which each page writes as its language does
# (static/js/classroom/quizwords.js). The English text beside them (`text`, `options`, `explain`) is what the
# class report keeps; tests/classroom/test_quiz_words.py checks that the page's English is that text.


@dataclass(frozen=True)
class Num:
    """A number each page writes in its language: `fixed` (exactly `digits` decimals), `upto` (at most
    `digits`), `percent` (a share as a percentage with `digits` decimals), `sig` (`digits` significant
    digits), `count` (a whole number, its thousands grouped as the language groups them: 4,096) or `int`
    (a whole number, not grouped: d_k = 1024)."""

    value: float
    digits: int = 3
    style: Literal["fixed", "upto", "percent", "sig", "count", "int"] = "fixed"

    def public(self) -> dict[str, Any]:
        return {"num": self.value, "digits": self.digits, "style": self.style}


@dataclass(frozen=True)
class Word:
    """A word the class sees: as typed or as the model split it, or word `at` of a built-in example (each
    page writes that one as its own table does: "gato" on a Spanish page)."""

    text: str
    example: str | None = None
    at: int = 0

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"word": self.text}
        if self.example is not None:
            out |= {"example": self.example, "at": self.at}
        return out


Value = str | int | Num | Word


@dataclass(frozen=True)
class Say:
    """One message of the catalogs and its values."""

    key: str
    values: dict[str, Value] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        return {"key": self.key, "values": {k: _public_value(v) for k, v in self.values.items()}}


def _public_value(v: Value) -> Any:
    return v if isinstance(v, str | int) else v.public()


def say(key: str, /, **values: Value) -> Say:
    return Say(key, values)


@dataclass(frozen=True)
class Words:
    """A question's sentences as messages: the question, each option (a message, or a word as it is), the
    reveal's sentence, and a cell question's row and column words."""

    text: Say
    options: list[Say | Word]
    explain: Say
    grid: tuple[list[Word], list[Word]] | None = None

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text.public(), "options": [o.public() for o in self.options]}
        if self.grid is not None:
            out["grid"] = {"rows": [w.public() for w in self.grid[0]], "cols": [w.public() for w in self.grid[1]]}
        return out


@dataclass(frozen=True)
class Asked:
    """A question as the class sees it, with its answer (kept by the server until the reveal)."""

    kind: Kind
    text: str
    options: list[str]
    right: list[int]  # the right options' indices (a cell question may have several)
    value: float  # the number behind the answer (a weight, a length, a count, …)
    explain: str  # the reveal's sentence, with that number
    grid: tuple[list[str], list[str]] | None = None  # a cell question's row and column labels
    hides: list[str] = field(default_factory=list)  # strings no screen shows before the reveal
    words: Words | None = None  # the same sentences as messages, for each page's language

    def public(self) -> dict[str, Any]:
        """What every page receives while the class answers: no answer, no value."""
        out: dict[str, Any] = {"kind": self.kind, "text": self.text, "options": self.options}
        if self.grid is not None:
            out["grid"] = {"rows": self.grid[0], "cols": self.grid[1]}
        if self.words is not None:
            out["say"] = self.words.public()
        return out

    def answer(self) -> dict[str, Any]:
        """What the reveal adds."""
        out: dict[str, Any] = {"right": self.right, "value": self.value, "explain": self.explain}
        if self.words is not None:
            out["say"] = self.words.explain.public()
        return out


class View:
    """The room's state (the page's URL parameters, strings) with the chapter's defaults."""

    def __init__(self, state: dict[str, Any], defaults: dict[str, str] | None = None) -> None:
        self.state = {k: str(v) for k, v in state.items()}
        self.defaults = defaults or {}

    def __getitem__(self, name: str) -> str:
        value = self.state.get(name)
        return value if value not in (None, "") else self.defaults.get(name, "")

    def int(self, name: str, default: int) -> int:
        try:
            return int(self[name])
        except ValueError:
            return default


@dataclass(frozen=True)
class Question:
    id: str
    chapter: str
    steps: tuple[str, ...]  # the steps it may be asked at
    kind: Kind
    title: str  # a short name for the teacher (the Ask button's hint, the report)
    make: Callable[[View, Models], Asked]
    defaults: dict[str, str] = field(default_factory=dict)  # the chapter's parameters, as its module's `params`

    def ask(self, state: dict[str, Any], models: Models) -> Asked:
        view = View(state, self.defaults)
        if view["chapter"] != self.chapter or view["step"] not in self.steps:
            where = f"chapter {self.chapter!r}, step {' or '.join(repr(s) for s in self.steps)}"
            here = f"{view['chapter']!r}, {view['step']!r}"
            raise NotAskable(f"this question is asked at {where}; the class is at {here}")
        return self.make(view, models)


# ---- what the questions share ------------------------------------------------------------------

RangeBin = tuple[float, float, str]  # [low, high) and its label


def _bin(value: float, bins: Sequence[RangeBin]) -> int:
    """The index of the bin that holds value ([low, high); the last bin includes its high end)."""
    for i, (low, high, _) in enumerate(bins):
        if low <= value < high or (i == len(bins) - 1 and value == high):
            return i
    raise ValueError(f"{value} lies outside every range")  # pragma: no cover - the bins cover [0, 1]


def _range(
    text: str, value: float, bins: Sequence[RangeBin], explain: str, hides: list[str], words: tuple[str, Say, Say]
) -> Asked:
    """A range question; `words`: the catalog's prefix of the bins' labels (<prefix>.0, .1, …), the question
    and the reveal's sentence as messages."""
    prefix, said, explained = words
    options: list[Say | Word] = [Say(f"{prefix}.{i}") for i in range(len(bins))]
    return Asked(
        "range",
        text,
        [b[2] for b in bins],
        [_bin(value, bins)],
        float(value),
        explain,
        hides=hides,
        words=Words(said, options, explained),
    )


def _numbers(
    text: str, right: int, wrong: Sequence[int], explain: str, hides: list[str], said: Say, explained: Say
) -> Asked:
    """A number question: the right number and up to three others (misreadings), smallest first."""
    shown = sorted({right, *(w for w in wrong if w > 0 and w != right)})[:4]
    if right not in shown:
        shown = sorted([*shown[:3], right])
    options: list[Say | Word] = [Say("quiz.number", {"n": Num(n, 0, "count")}) for n in shown]
    labels = [f"{n:,}" for n in shown]
    return Asked(
        "number",
        text,
        labels,
        [shown.index(right)],
        float(right),
        explain,
        hides=hides,
        words=Words(said, options, explained),
    )


def _words(text: str) -> list[str]:
    return [w for w in text.split() if w]


def quote(word: str) -> str:
    return f"“{word}”"


def f3(x: float) -> str:
    """As the page writes a number (format.js fixed3): three decimals, a minus sign for negatives."""
    return f"{x:.3f}".replace("-", "\u2212")


def _value_hides(x: float) -> list[str]:
    """The ways a page writes x: 3 and 4 decimals."""
    return sorted({f3(x), f"{x:.4f}".replace("-", "\u2212")})


def _matrix(text: str) -> np.ndarray | None:
    try:
        rows = [[float(c) for c in row.split(",")] for row in text.split(";")]
    except ValueError:
        return None
    return np.array(rows, dtype=np.float64) if rows and len({len(r) for r in rows}) == 1 else None


def _attention_view(view: View, models: Models, mask: Mask) -> SentenceAttention:
    """The five steps' numbers for the view: its sentence, its hand-set q, k, v, or its example."""
    if view["sentence"]:
        layer: int | str = view["layer"] if view["layer"] == "mean" else view.int("layer", 0)
        head: int | str = view["head"] if view["head"] == "mean" else view.int("head", 0)
        return models.sentence(view["sentence"], view["model"] or None, layer, head, mask)
    q, k, v = (_matrix(view[name]) for name in "qkv")
    if q is not None and k is not None and v is not None:
        try:
            tokens = [str(t) for t in json.loads(view["tokens"] or "null") or []]
        except ValueError:
            tokens = []
        if len(tokens) != len(q):
            tokens = [f"t{i}" for i in range(len(q))]
    else:
        example = EXAMPLES.get(view["example"] or DEFAULT_EXAMPLE)
        if example is None:
            raise NotAskable(f"no example {view['example']!r}")
        q, k, v, tokens = example.q, example.k, example.v, list(example.tokens)
        stages = attention(q, k, v, mask)
        return SentenceAttention(tokens, stages.masked, stages.weights, example.id)
    stages = attention(q, k, v, mask)
    return SentenceAttention(tokens, stages.masked, stages.weights)


def _word(a: SentenceAttention, i: int) -> Word:
    return Word(a.tokens[i], a.example, i)


def _focus(view: View, n: int) -> int:
    f = view.int("focus", 0)
    if not 0 <= f < n:
        raise NotAskable(f"the focused word {f} is past the sentence's {n} tokens")
    return f


# ---- chapter 1: why not an RNN ---------------------------------------------------------------------

FADE_BINS: list[RangeBin] = [
    (0.0, 0.01, "less than a hundredth"),
    (0.01, 0.1, "a hundredth to a tenth"),
    (0.1, 0.5, "a tenth to a half"),
    (0.5, math.inf, "half as much or more"),
]


def rnn_fade(view: View, models: Models) -> Asked:
    words = _words(view["words"])
    if len(words) < 2:
        raise NotAskable("the RNN needs at least two words")
    r = rnn.run(words)
    n = len(words)
    ratio = float(r.influence[-1] / r.influence[0])
    text = (
        f"The RNN reads {n} words, one at a time. By h_{n}, how much does the first word, {quote(words[0])}, "
        f"still count, compared with how much it counted in h_1?"
    )
    explain = (
        f"{quote(words[0])} counts {ratio:.3g} times as much in h_{n} as in h_1 "
        f"(‖∂h/∂x₁‖ from {r.influence[0]:.4f} to {r.influence[-1]:.4g}): each word in between multiplies it "
        "by W_h and by tanh′ ≤ 1."
    )
    last = float(r.influence[-1])
    hides = [f"{last:.4f}" if last >= 0.001 else f"{last:.2e}".replace("-", "\u2212")]
    first = Word(words[0])
    said = say("quiz.rnn.fade.text", n=n, word=first)
    explained = say(
        "quiz.rnn.fade.explain",
        word=first,
        n=n,
        ratio=Num(ratio, 3, "sig"),
        first=Num(float(r.influence[0]), 4),
        last=Num(last, 4, "sig"),
    )
    return _range(text, ratio, FADE_BINS, explain, hides, ("quiz.rnn.fade.bin", said, explained))


# ---- chapter 2: where q, k and v come from ---------------------------------------------------------


def projections_learned(view: View, models: Models) -> Asked:
    p = projections.project()
    n, d = p.x.shape
    learned = int(p.w_q.size + p.w_k.size + p.w_v.size)
    text = (
        f"Each token's x has {d} numbers, and W_Q, W_K and W_V turn it into its q, k and v ({d} numbers each). "
        f"How many numbers must the model learn for the three matrices, however long the sentence?"
    )
    explain = f"Three matrices of {d} × {d}: 3 × {d} × {d} = {learned}, the same for {n} tokens or 1,000."
    said = say("quiz.projections.learned.text", d=d)
    explained = say("quiz.projections.learned.explain", d=d, learned=Num(learned, 0, "count"), n=n)
    return _numbers(
        text, learned, [3 * d, d * d, n * learned], explain, [f"3 × {d} × {d} = {learned}"], said, explained
    )


# ---- chapter 3: the five steps ---------------------------------------------------------------------

SHARE_BINS: list[RangeBin] = [
    (0.0, 0.25, "less than a quarter"),
    (0.25, 0.5, "a quarter to a half"),
    (0.5, 0.75, "a half to three quarters"),
    (0.75, 1.0, "more than three quarters"),
]


def steps_share(view: View, models: Models) -> Asked:
    mask: Mask = "causal" if view["mask"] == "causal" else "full"
    a = _attention_view(view, models, mask)
    f = _focus(view, len(a.tokens))
    row = a.masked[f]
    seen = np.flatnonzero(np.isfinite(row))
    top = int(seen[np.argmax(row[seen])])  # the key it scores highest (first of a tie), on the screen
    share = float(a.weights[f, top])
    word, key = a.tokens[f], a.tokens[top]
    text = (
        f"{quote(word)} scores {quote(key)} highest. "
        f"About how much of the attention of {quote(word)} goes to {quote(key)}?"
    )
    explain = f"{quote(word)} gives {f3(share)} of its attention to {quote(key)} (softmax of the scaled scores)."
    said = say("quiz.steps.share.text", word=_word(a, f), key=_word(a, top))
    explained = say("quiz.steps.share.explain", word=_word(a, f), key=_word(a, top), share=Num(share))
    hides = [*_value_hides(share), f"{100 * share:.1f}%"]
    return _range(text, share, SHARE_BINS, explain, hides, ("quiz.steps.share.bin", said, explained))


# ---- chapter 4: why divide by √d_k ---------------------------------------------------------------

LARGEST_BINS: list[RangeBin] = [
    (0.0, 0.25, "under 0.25 (spread out)"),
    (0.25, 0.5, "0.25 to 0.5"),
    (0.5, 0.9, "0.5 to 0.9"),
    (0.9, 1.0, "over 0.9 (nearly all on one key)"),
]


def scaling_unscaled(view: View, models: Models) -> Asked:
    d_k = view.int("dk", 64)
    if not scaling.MIN_D_K <= d_k <= scaling.MAX_D_K:
        raise NotAskable(f"d_k must be {scaling.MIN_D_K} … {scaling.MAX_D_K}")
    s = scaling.measure(d_k)
    top = s.max_unscaled
    text = (
        f"d_k = {d_k}: one query against {scaling.KEYS} keys. If softmax gets the raw scores q·k, without ÷√d_k, "
        "how large is the query's largest weight?"
    )
    explain = f"Without ÷√d_k its largest weight is {f3(top)}; with it, {f3(s.max_scaled)}."
    said = say("quiz.scaling.unscaled.text", dk=Num(d_k, 0, "int"), keys=scaling.KEYS)
    explained = say("quiz.scaling.unscaled.explain", unscaled=Num(top), scaled=Num(s.max_scaled))
    return _range(text, top, LARGEST_BINS, explain, _value_hides(top), ("quiz.scaling.unscaled.bin", said, explained))


# ---- chapter 5: full vs causal ---------------------------------------------------------------------


def masks_zero(view: View, models: Models) -> Asked:
    a = _attention_view(view, models, "full")
    n = min(len(a.tokens), MAX_CELL_SIDE)
    names = a.tokens[:n]
    right = [i * n + j for i in range(n) for j in range(n) if j > i]
    text = "Switch on the causal mask (GPT's). Tap one cell whose weight becomes exactly 0 after softmax."
    if n < len(a.tokens):
        text += f" (The first {n} words.)"
    explain = (
        f"Every cell right of the diagonal: a word may look only at itself and the words before it. "
        f"{len(right)} of the {n * n} cells become 0."
    )
    cells = [f"{names[i]} → {names[j]}" for i in range(n) for j in range(n)]
    said = say("quiz.masks.zero.text", cut=str(n < len(a.tokens)).lower(), shown=n)
    explained = say("quiz.masks.zero.explain", zero=len(right), cells=n * n)
    grid = [_word(a, i) for i in range(n)]
    labels: list[Say | Word] = [say("quiz.cell", row=grid[i], col=grid[j]) for i in range(n) for j in range(n)]
    words = Words(said, labels, explained, (grid, grid))
    return Asked("cell", text, cells, right, float(len(right)), explain, grid=(names, names), words=words)


def masks_split(view: View, models: Models) -> Asked:
    a = _attention_view(view, models, "causal")
    f = _focus(view, len(a.tokens))
    if f == 0:
        raise NotAskable("the first word sees only itself: focus a later word to ask this question")
    w = float(a.weights[f, 0])
    word, first = a.tokens[f], a.tokens[0]
    text = f"Under the causal mask, after softmax: what weight does {quote(word)} give to {quote(first)}?"
    visible = f + 1
    # the misreadings: hidden (0), every word alike as with no mask (1/n), only visible words alike, all of it
    candidates = {round(w, 2), 0.0, round(1 / len(a.tokens), 2), round(1 / visible, 2), 1.0}
    shown = sorted(candidates)
    if len(shown) > 4:  # keep the right one and the three misreadings nearest to it
        shown = sorted(sorted(shown, key=lambda x: (x != round(w, 2), abs(x - w)))[:4])
    options = [f"{x:.2f}".rstrip("0").rstrip(".") if x not in (0.0, 1.0) else str(int(x)) for x in shown]
    right = shown.index(round(w, 2))
    explain = (
        f"{quote(word)} may see {visible} word{'s' if visible > 1 else ''} (itself and those before it); "
        f"it gives {f3(w)} to {quote(first)}."
    )
    said = say("quiz.masks.split.text", word=_word(a, f), first=_word(a, 0))
    explained = say("quiz.masks.split.explain", word=_word(a, f), first=_word(a, 0), visible=visible, weight=Num(w))
    labels: list[Say | Word] = [say("quiz.number", n=Num(x, 2, "upto")) for x in shown]
    words = Words(said, labels, explained)
    return Asked("number", text, options, [right], w, explain, hides=_value_hides(w), words=words)


# ---- chapter 6: many heads -------------------------------------------------------------------------


def heads_concat(view: View, models: Models) -> Asked:
    h = min(4, max(2, view.int("heads", 2)))
    ex = multihead.example(h, view.int("seed", 7))
    x, w_v = np.asarray(ex["x"]), np.asarray(ex["w_v"])
    n, d_model = x.shape
    d_v = w_v.shape[2]
    width = h * d_v
    text = (
        f"Each of the {h} heads hands back a z of {d_v} numbers for every word. After Concat, "
        "how many numbers does each word have?"
    )
    explain = f"Concat writes the heads' z one after the other: {h} × {d_v} = {width} numbers per word."
    said = say("quiz.heads.concat.text", heads=h, dv=d_v)
    explained = say("quiz.heads.concat.explain", heads=h, dv=d_v, width=width)
    # the misreadings: one head's z only, each head keeping the model's width, every word's numbers together
    return _numbers(text, width, [d_v, h * d_model, n * width], explain, [f"{h} × {d_v} = {width}"], said, explained)


# ---- chapter 7: word order -------------------------------------------------------------------------


def _order(view: View, words: list[str]) -> list[int]:
    parts = view["order"].replace(",", " ").split()
    if parts:
        try:
            return [int(p) for p in parts]
        except ValueError:
            raise NotAskable(f"order {view['order']!r} is not a list of word numbers") from None
    default = list(positions.DEFAULT_ORDER) if words == list(positions.DEFAULT_WORDS) else None
    return default if default is not None else list(range(len(words)))[::-1]


def positions_moved(view: View, models: Models) -> Asked:
    words = _words(view["words"])
    order = _order(view, words)
    try:
        t = positions.toy(words, order)
    except ValueError as e:
        raise NotAskable(str(e)) from None
    n = len(words)
    # the query: a word that stays in place while the word it attends to most moves (else one that stays, else
    # the first); of those, the one whose answer is clearest (the largest weight)
    stays = [i for i in range(n) if order[i] == i]
    moved_top = [i for i in stays if order[int(np.argmax(t.plain_perm[i]))] != int(np.argmax(t.plain_perm[i]))]
    i = max(moved_top or stays or [0], key=lambda r: float(t.plain_perm[r].max()))
    top = int(np.argmax(t.plain_perm[i]))
    perm = t.words_perm
    text = (
        f"No positions yet. Reorder {quote(' '.join(words))} as {quote(' '.join(perm))}. "
        f"In the new order, which word does {quote(perm[i])} attend to most?"
    )
    w = float(t.plain_perm[i, top])
    explain = (
        f"{quote(perm[i])} still gives {f3(w)} to {quote(perm[top])}: without positions each word keeps its q, k "
        "and v, so the weights are the same numbers, moved with the words."
    )
    options = list(perm)
    said = say("quiz.positions.moved.text", words=" ".join(words), order=" ".join(perm), word=Word(perm[i]))
    explained = say("quiz.positions.moved.explain", word=Word(perm[i]), key=Word(perm[top]), weight=Num(w))
    # its weight is on the screen, in the first order's table: reading that table and thinking is the way to
    # the answer; what would give it away is the reordered table, and the proof that the two are one
    hides = [f"max |W_perm − P·W·Pᵀ| = {t.plain_gap:.0f}", f"{quote(perm[i])} still gives"]
    words_ = Words(said, [Word(p) for p in perm], explained)
    return Asked("word", text, options, [top], w, explain, hides=hides, words=words_)


# ---- chapter 8: the transformer block --------------------------------------------------------------


def block_residual(view: View, models: Models) -> Asked:
    tokens, norms = models.block(view["sentence"], view.int("layer", 3))
    tok = view["tok"]
    if tok.isdigit() and int(tok) < len(tokens):
        t = int(tok)
    else:
        t = tokens.index("it") if "it" in tokens else min(1, len(tokens) - 1)
    a, b, r = float(norms["input"][t]), float(norms["attention"][t]), float(norms["residual"][t])
    word = quote(tokens[t])
    text = (
        f"{word} comes in with length ‖x‖ = {f3(a)}, and attention proposes a change of length {f3(b)}. "
        f"After the residual add, x + change, how long is the vector of {word}?"
    )
    options = [
        f"shorter than {f3(a)}",
        f"between {f3(a)} and {f3(a + b)}",
        f"exactly {f3(a + b)}",
        f"longer than {f3(a + b)}",
    ]
    right = 0 if r < a else 2 if math.isclose(r, a + b, rel_tol=1e-6) else 3 if r > a + b else 1
    explain = (
        f"‖x + change‖ = {f3(r)}: two arrows add like arrows, not like lengths, so the sum is never longer than "
        f"{f3(a)} + {f3(b)} and is shorter when they point apart."
    )
    token = Word(tokens[t])
    said = say("quiz.block.residual.text", word=token, input=Num(a), change=Num(b))
    explained = say("quiz.block.residual.explain", length=Num(r), input=Num(a), change=Num(b))
    labels: list[Say | Word] = [
        say("quiz.block.residual.shorter", input=Num(a)),
        say("quiz.block.residual.between", input=Num(a), sum=Num(a + b)),
        say("quiz.block.residual.exactly", sum=Num(a + b)),
        say("quiz.block.residual.longer", sum=Num(a + b)),
    ]
    words = Words(said, labels, explained)
    return Asked("range", text, options, [right], r, explain, hides=_value_hides(r), words=words)


# ---- chapter 9: common mistakes --------------------------------------------------------------------

ROWSUM_BINS: list[RangeBin] = [
    (0.0, 0.5, "less than 0.5"),
    (0.5, 0.9, "0.5 to 0.9"),
    (0.9, 1.0 - 1e-9, "0.9 to just under 1"),
    (1.0 - 1e-9, 2.0, "exactly 1"),
]


def mistakes_late(view: View, models: Models) -> Asked:
    example = EXAMPLES.get(view["example"] or DEFAULT_EXAMPLE)
    if example is None:
        raise NotAskable(f"no example {view['example']!r}")
    tokens = list(example.tokens)
    word = view["word"]
    if word.isdigit() and int(word) < len(tokens):
        f = int(word)
    else:
        f = tokens.index("its") if "its" in tokens else len(tokens) - 1
    late = mistakes.with_mistake(example.q, example.k, example.v, "causal", "mask-after-softmax")
    total = float(late.weights[f].sum())
    text = (
        "The next mistake: softmax first, over every word, and only then the causal mask sets the later words' "
        f"weights to 0. What does the row of {quote(tokens[f])} add up to then?"
    )
    explain = (
        f"The row of {quote(tokens[f])} adds up to {f3(total)}: the shares softmax gave the later words are "
        "thrown away."
        if total < 1 - 1e-9
        else f"The row of {quote(tokens[f])} still adds up to 1: it has no later words to lose."
    )
    word_ = Word(tokens[f], example.id, f)
    said = say("quiz.mistakes.late.text", word=word_)
    explained = (
        say("quiz.mistakes.late.explain", word=word_, sum=Num(total))
        if total < 1 - 1e-9
        else say("quiz.mistakes.late.whole", word=word_)
    )
    hides = _value_hides(total) if total < 1 - 1e-9 else []
    return _range(text, total, ROWSUM_BINS, explain, hides, ("quiz.mistakes.late.bin", said, explained))


# ---- chapter 10: writing one token at a time ---------------------------------------------------------

NEXT_OPTIONS = 4  # the likeliest next token and the three after it


def shown_token(token: str) -> str:
    """A token as the Write chapter shows it (a newline ↵, a tab ⇥, nothing ∅)."""
    return token.replace("\n", "↵").replace("\t", "⇥") or "∅"


def writing_next(view: View, models: Models) -> Asked:
    written = max(0, view.int("n", 0))
    used = (view["used"] or "0,0,1").split(",")
    try:
        sampling = (float(used[0]), int(used[1]), float(used[2]))
    except (ValueError, IndexError):
        sampling = (0.0, 0, 1.0)
    prompt = view["prompt"]
    if not prompt.strip():
        raise NotAskable("the prompt is empty: type the start of a text first")
    candidates = models.next_tokens(prompt, written, sampling)
    if len(candidates) < NEXT_OPTIONS:
        raise NotAskable("the writing has ended (the model wrote its end-of-text token)")
    top = candidates[:NEXT_OPTIONS]
    labels = [shown_token(t) for t, _ in top]
    options = sorted(set(labels), key=lambda w: (w.strip().lower(), w))  # no order that gives the answer away
    if len(options) < NEXT_OPTIONS:
        raise NotAskable("the likeliest tokens look alike on a screen")
    best, p = labels[0], top[0][1]
    so_far = "the prompt" if not written else f"the prompt and the {written} tokens written"
    text = f"The model has read {so_far}. Which token does it rate the likeliest to come next?"
    explain = f"{quote(best)}, with a probability of {100 * p:.1f}%."
    said = say("quiz.writing.next.text", written=written)
    explained = say("quiz.writing.next.explain", token=Word(best), p=Num(p, 1, "percent"))
    words = Words(said, [Word(o) for o in options], explained)
    hides = [f"{100 * p:.1f}%", f"{p:.3f}"]
    return Asked("word", text, options, [options.index(best)], p, explain, hides=hides, words=words)


# ---- chapter 11: attention in today's models -------------------------------------------------------

SINK_BINS: list[RangeBin] = [
    (0.0, 0.1, "under a tenth"),
    (0.1, 1 / 3, "a tenth to a third"),
    (1 / 3, 2 / 3, "a third to two thirds"),
    (2 / 3, 1.0, "over two thirds"),
]


def today_sink(view: View, models: Models) -> Asked:
    layer, head = view.int("layer", 5), view.int("head", 0)
    tokens, weights = models.today(view["sentence"], layer, head)
    if len(tokens) < 2:
        raise NotAskable("the sentence needs at least two tokens")
    mean = float(weights[1:, 0].mean())  # the queries after the first, on token 0 (the page's sinkMean)
    text = (
        f"Layer {layer}, head {head} of the decoder, on {quote(view['sentence'])}: on average, how much of its "
        f"attention does each later token give the very first token, {quote(tokens[0])}?"
    )
    explain = f"On average {100 * mean:.1f}% ({mean:.4f}) goes to {quote(tokens[0])}: the attention sink."
    said = say("quiz.today.sink.text", layer=layer, head=head, sentence=view["sentence"], first=Word(tokens[0]))
    explained = say("quiz.today.sink.explain", share=Num(mean, 1, "percent"), mean=Num(mean, 4), first=Word(tokens[0]))
    hides = [f"{100 * mean:.1f}%", f"{mean:.4f}"]
    return _range(text, mean, SINK_BINS, explain, hides, ("quiz.today.sink.bin", said, explained))


# ---- chapter 12: attention without the n×n table ----------------------------------------------------

RESCALE_BINS: list[RangeBin] = [
    (0.0, 0.1, "less than 0.1"),
    (0.1, 0.5, "0.1 to 0.5"),
    (0.5, 1.0, "0.5 to just under 1"),
    (1.0, 1.0, "exactly 1"),
]


def _biggest_jump(ms: list[np.ndarray], rows: Sequence[int]) -> tuple[int, int] | None:
    """(query, block) where a query's running maximum m grows the most from one block to the next (the
    chapter's own pick, static/js/chapters/tiles.js biggestJump: the first of a tie), or None."""
    best: tuple[int, int] | None = None
    by_best = 0.0
    for t in range(1, len(ms)):
        for i in rows:
            before, by = ms[t - 1][i], ms[t][i] - ms[t - 1][i]
            if np.isfinite(before) and by > 0 and (best is None or by > by_best):
                best, by_best = (i, t), float(by)
    return best


def tiles_rescale(view: View, models: Models) -> Asked:
    if view["text"]:
        raise NotAskable("this question is asked on the chapter's example: clear the typed sentence first")
    example = EXAMPLES[DEFAULT_EXAMPLE]
    n = len(example.tokens)
    b = max(1, view.int("block", 2))
    mask: Mask = "causal" if view["mask"] == "causal" else "full"
    if b >= n:
        raise NotAskable(f"with blocks of {b} the {n} keys are one block: nothing is rescaled")
    run = tiles.steps(example.q, example.k, example.v, b, mask)
    ms = [np.asarray(step.m) for step in run.steps]
    word = view["word"]
    jump = _biggest_jump(ms, range(n))
    f = int(word) if word.isdigit() and int(word) < n else (jump[0] if jump else 0)
    at = view["at"].split(":")
    if len(at) == 2 and at[0] == "rescale" and at[1].isdigit() and 1 <= int(at[1]) <= len(ms):
        t = int(at[1]) - 1
    else:
        own = _biggest_jump(ms, [f])
        t = own[1] if own else 0
    if t == 0:
        if jump is None:
            raise NotAskable(f"with blocks of {b} no query's m grows after its first block: try a smaller b")
        raise NotAskable(f"at the first block {quote(example.tokens[f])} has kept nothing yet: pick a later block")
    alpha = float(np.asarray(run.steps[t].alpha)[f])
    m_old, m_new = float(ms[t - 1][f]), float(ms[t][f])
    text = (
        f"Blocks of {b} key{'s' if b != 1 else ''}. Block {t + 1} brings {quote(example.tokens[f])} its scores. "
        "By what number are the l "
        "and o it kept so far multiplied before this block's terms are added?"
    )
    explain = (
        f"α = e^(m_old − m) = e^({f3(m_old)} − {f3(m_new)}) = {f3(alpha)}: measured from the bigger m, what was "
        f"kept so far is worth {f3(alpha)} times as much"
        if alpha < 1
        else f"α = 1: this block brings no score bigger than m = {f3(m_new)}, so nothing is rescaled"
    )
    word_ = Word(example.tokens[f], example.id, f)
    said = say("quiz.tiles.rescale.text", b=b, block=t + 1, word=word_)
    explained = (
        say("quiz.tiles.rescale.explain", old=Num(m_old), new=Num(m_new), alpha=Num(alpha))
        if alpha < 1
        else say("quiz.tiles.rescale.one", m=Num(m_new))
    )
    hides = _value_hides(alpha) if alpha < 1 else []
    return _range(text, alpha, RESCALE_BINS, explain, hides, ("quiz.tiles.rescale.bin", said, explained))


# ---- the registry --------------------------------------------------------------------------------

# the chapters' own parameters and their defaults, as in their modules (static/js/chapters/*.js `params`)
_RNN = {"words": " ".join(rnn.DEFAULT_WORDS)}
_SCALING = {"dk": "64"}
_HEADS = {"heads": "2", "seed": "7", "word": "1"}
_POSITIONS = {"words": " ".join(positions.DEFAULT_WORDS), "order": ""}
_BLOCK = {"sentence": "The animal didn't cross the street because it was too tired.", "layer": "3", "tok": ""}
_MISTAKES = {"example": DEFAULT_EXAMPLE, "word": ""}
_WRITING = {"prompt": "The capital of France is", "n": "0", "used": "0,0,1"}
_TODAY = {"sentence": "The cat ate its fish because it was hungry.", "layer": "5", "head": "0"}
_TILES = {"text": "", "block": "2", "mask": "full", "word": "", "at": ""}
_ATTENTION = {"example": DEFAULT_EXAMPLE, "focus": "0", "mask": "full"}

QUESTIONS: dict[str, Question] = {
    q.id: q
    for q in (
        Question("rnn.fade", "rnn", ("chain",), "range", "how much the first word still counts", rnn_fade, _RNN),
        Question(
            "projections.learned",
            "projections",
            ("x", "q", "k", "v"),
            "number",
            "numbers to learn for W_Q, W_K, W_V",
            projections_learned,
        ),
        Question(
            "steps.share",
            "steps",
            ("scale", "mask", "softmax", "mix"),
            "range",
            "the share of the top-scored word",
            steps_share,
            _ATTENTION,
        ),
        Question(
            "scaling.unscaled",
            "scaling",
            ("spread",),
            "range",
            "the largest weight without ÷√d_k",
            scaling_unscaled,
            _SCALING,
        ),
        Question("masks.zero", "masks", ("full",), "cell", "which cells become 0", masks_zero, _ATTENTION),
        Question(
            "masks.split", "masks", ("causal",), "number", "a weight under the causal mask", masks_split, _ATTENTION
        ),
        Question("heads.concat", "heads", ("heads",), "number", "numbers per word after Concat", heads_concat, _HEADS),
        Question(
            "positions.moved",
            "positions",
            ("plain",),
            "word",
            "where a word attends, reordered",
            positions_moved,
            _POSITIONS,
        ),
        Question(
            "block.residual",
            "block",
            ("attention",),
            "range",
            "the length after the residual add",
            block_residual,
            _BLOCK,
        ),
        Question(
            "mistakes.late",
            "mistakes",
            ("no-scale", "softmax-columns"),
            "range",
            "a row's sum with the mask after softmax",
            mistakes_late,
            _MISTAKES,
        ),
        Question(
            "writing.next",
            "writing",
            ("write", "causal", "cache", "size"),
            "word",
            "the next token",
            writing_next,
            _WRITING,
        ),
        Question(
            "tiles.rescale",
            "tiles",
            ("rescale",),
            "range",
            "the rescale factor α of what was kept",
            tiles_rescale,
            _TILES,
        ),
        Question("today.sink", "today", ("sink",), "range", "the attention on the first token", today_sink, _TODAY),
    )
}


def register(question: Question) -> None:
    """Add a question (a chapter written elsewhere, e.g. a later engineer's, or a test's)."""
    if question.id in QUESTIONS:
        raise ValueError(f"question {question.id!r} exists already")
    QUESTIONS[question.id] = question


def at(chapter: str, step: str) -> list[Question]:
    """The questions that may be asked at this step of this chapter."""
    return [q for q in QUESTIONS.values() if q.chapter == chapter and step in q.steps]


def catalogue() -> list[dict[str, Any]]:
    """Every question, for the page: where it may be asked, its kind and its short name (no answers)."""
    return [
        {"id": q.id, "chapter": q.chapter, "steps": list(q.steps), "kind": q.kind, "title": q.title}
        for q in QUESTIONS.values()
    ]


# ---- chapter 13: look inside ------------------------------------------------------------------------

# the heads the chapter's "switch a head off" step offers (static/js/chapters/inside.js CONTENDERS): an
# early, a middle and a late one
CONTENDERS: tuple[tuple[int, int], ...] = ((0, 6), (23, 4), (27, 1))
_INSIDE = {"prompt": "The capital of France is"}


def _prompt(view: View) -> str:
    prompt = view["prompt"]
    if not prompt.strip():
        raise NotAskable("the prompt is empty: type the start of a text first")
    return prompt


def inside_head_off(view: View, models: Models) -> Asked:
    """Asked before the step that switches heads off: which contender takes the most from the next word."""
    prompt = _prompt(view)
    changes = [models.next_word_without(prompt, [head]) for head in CONTENDERS]
    token, before = changes[0][0], changes[0][1]
    drops = [before - after for _, _, after in changes]
    top = max(drops)
    right = [i for i, d in enumerate(drops) if d >= top - 1e-3]  # a near tie: either is right
    options = [f"layer {layer}, head {head}" for layer, head in CONTENDERS]
    text = (
        f"After {quote(prompt)} the model's likeliest next token is {quote(shown_token(token))}. Which of these "
        "heads, switched off alone, takes the most away from it?"
    )
    after = [before - d for d in drops]
    each = "; ".join(f"{o}: {100 * before:.1f}% → {100 * p:.1f}%" for o, p in zip(options, after, strict=True))
    explain = f"{options[right[0]]}. {each}. One head can matter a lot while most matter little."
    hides = [f"{100 * p:.1f}%" for p in after]
    # the same in each page's language: each contender's change, "layer L, head H: before → after"
    said = say("quiz.inside.headOff.text", prompt=Word(prompt), token=Word(shown_token(token)))
    heads: list[Say | Word] = [
        say("quiz.inside.headOff.option", layer=Num(la, 0, "int"), head=Num(he, 0, "int")) for la, he in CONTENDERS
    ]
    best = CONTENDERS[right[0]]
    values: dict[str, Value] = {"lb": Num(best[0], 0, "int"), "kb": Num(best[1], 0, "int")}
    values["before"] = Num(before, 1, "percent")
    for i, ((la, he), p) in enumerate(zip(CONTENDERS, after, strict=True)):
        values |= {f"l{i}": Num(la, 0, "int"), f"k{i}": Num(he, 0, "int"), f"a{i}": Num(p, 1, "percent")}
    explained = say("quiz.inside.headOff.explain", **values)
    words = Words(said, heads, explained)
    return Asked("word", text, options, right, top, explain, hides=hides, words=words)


def inside_lens_layer(view: View, models: Models) -> Asked:
    """In which band of layers the final answer first becomes the top guess: asked at the step before the lens, or
    at the lens while the page withholds every layer's guess (static/js/chapters/inside.js)."""
    prompt = _prompt(view)
    first, token, layers = models.lens(prompt)
    third = layers // 3
    bins: list[RangeBin] = [
        (-1, third, f"early: the embedding or layers 0–{third - 1}"),
        (third, 2 * third, f"in the middle: layers {third}–{2 * third - 1}"),
        (2 * third, layers - 2, f"late: layers {2 * third}–{layers - 3}"),
        (layers - 2, layers - 1, f"only at the very end: layer {layers - 2} or {layers - 1}"),
    ]
    word = quote(shown_token(token))
    text = (
        f"The model's last layer puts {word} on top after {quote(prompt)}. Read what every layer hands on as if the "
        f"model stopped there: at which layer is {word} first the top guess?"
    )
    where = "the embedding" if first < 0 else f"layer {first}"
    explain = f"At {where} of {layers} (0 … {layers - 1}): before it, other tokens are the top guess."
    # the same in each page's language; the bins' labels carry their layers' numbers
    n = {"third": Num(third, 0, "int"), "twoThirds": Num(2 * third, 0, "int"), "layers": Num(layers, 0, "int")}
    said = say("quiz.inside.lens.text", token=Word(shown_token(token)), prompt=Word(prompt))
    labels: list[Say | Word] = [
        say("quiz.inside.lens.bin.0", last=Num(third - 1, 0, "int")),
        say("quiz.inside.lens.bin.1", first=n["third"], last=Num(2 * third - 1, 0, "int")),
        say("quiz.inside.lens.bin.2", first=n["twoThirds"], last=Num(layers - 3, 0, "int")),
        say("quiz.inside.lens.bin.3", first=Num(layers - 2, 0, "int"), last=Num(layers - 1, 0, "int")),
    ]
    explained = say(
        "quiz.inside.lens.explain",
        where="embedding" if first < 0 else "layer",
        layer=Num(max(first, 0), 0, "int"),
        layers=n["layers"],
        last=Num(layers - 1, 0, "int"),
    )
    words = Words(said, labels, explained)
    # ("layer 29" is on the page anyway: the heads' grid)
    return Asked("range", text, [b[2] for b in bins], [_bin(first, bins)], float(first), explain, words=words)


register(
    Question(
        "inside.head-off",
        "inside",
        ("rollout", "flow"),
        "word",
        "the head that takes the most from the next word",
        inside_head_off,
        _INSIDE,
    )
)
register(
    Question(
        "inside.lens",
        "inside",
        ("off", "lens"),
        "range",
        "the first layer with the answer on top",
        inside_lens_layer,
        _INSIDE,
    )
)
