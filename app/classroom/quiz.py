"""The live quiz: "which word will this query attend to most?" One vote per follower, counted here.

The presenter asks (the tokens and the focused query), the followers tap a word (one vote per
seat and, by default, per address: broker.Subscriber.voters). Until the reveal nobody sees the
counts, not even the presenter: its socket hears only how many have answered
({"votes": {"id", "answered"}}), so the counts steer no one who votes last. The presenter then
reveals the answer (the argmax of the focused query's weights, which the presenter's page reads
from the server's answer); every follower sees the answer and the counts, and its page says
whether it was right.

Every question that ends (revealed, ended, or replaced by the next one) joins the room's quiz
summary: asked (followers in the room), answered, right, and the distribution over the words
(summary(), and as CSV: summary_csv()).
"""

from __future__ import annotations

import csv
import io
import json
import time
import uuid
from typing import Any

from app.classroom.broker import Broker, Subscriber
from app.classroom.schemas import QuizStart, QuizSummary, QuizSummaryRow
from app.errors import ClientError


async def _answered(broker: Broker, code: str, quiz: dict[str, Any]) -> str:
    answered = len(await broker.votes(code, quiz["id"]))
    return json.dumps({"votes": {"id": quiz["id"], "answered": answered}})


async def _finish(broker: Broker, code: str, quiz: dict[str, Any]) -> None:
    """Add a question to the room's summary (once: when revealed, or when it ends unrevealed)."""
    counts = quiz.get("counts") or (await broker.vote_counts(code, quiz))["counts"]
    answered = sum(counts)
    answer = quiz.get("answer")
    entry = {
        "id": quiz["id"],
        "question": quiz["question"],
        "query": quiz["tokens"][quiz["focus"]],
        "tokens": quiz["tokens"],
        "answer": answer,
        "asked": max(int(quiz.get("asked", 0)), await broker.followers(code), answered),
        "answered": answered,
        "right": None if answer is None else counts[answer],
        "counts": counts,
        "at": round(time.time(), 3),
    }
    await broker.log_quiz(code, entry)


async def start(broker: Broker, code: str, body: QuizStart) -> str:
    previous = await broker.quiz(code)
    if previous is not None and "answer" not in previous:
        await _finish(broker, code, previous)
    quiz = {"id": uuid.uuid4().hex[:12], "question": body.question, "tokens": body.tokens, "focus": body.focus}
    quiz["asked"] = await broker.followers(code)
    await broker.set_quiz(code, quiz)
    await broker.publish(code, json.dumps({"quiz": quiz}))
    await broker.publish(code, await _answered(broker, code, quiz), presenters_only=True)
    return str(quiz["id"])


async def reveal(broker: Broker, code: str, answer: int) -> dict[str, Any]:
    quiz = await broker.quiz(code)
    if quiz is None:
        raise ClientError(409, ["path", "code"], "no quiz is running in this room", "no_quiz")
    if answer >= len(quiz["tokens"]):
        msg = f"answer {answer} is past the last of the quiz's {len(quiz['tokens'])} words"
        raise ClientError(422, ["body", "answer"], msg, "out_of_range")
    if "answer" in quiz:
        raise ClientError(409, ["path", "code"], "this quiz's answer is out already", "revealed")
    quiz = {**quiz, "answer": answer, "counts": (await broker.vote_counts(code, quiz))["counts"]}
    await broker.set_quiz(code, quiz)
    await broker.publish(code, json.dumps({"quiz": quiz}))
    await _finish(broker, code, quiz)
    return quiz


async def end(broker: Broker, code: str) -> None:
    quiz = await broker.quiz(code)
    if quiz is not None and "answer" not in quiz:
        await _finish(broker, code, quiz)
    await broker.set_quiz(code, None)
    await broker.publish(code, '{"quiz":null}')


async def reset(broker: Broker, code: str) -> None:
    """A fresh start for the room: no quiz running, an empty summary (the view stays)."""
    await broker.set_quiz(code, None)
    await broker.log_quiz(code, None)
    await broker.publish(code, '{"quiz":null}')


async def summary(broker: Broker, code: str) -> QuizSummary:
    rows = [QuizSummaryRow(number=i + 1, **e) for i, e in enumerate(await broker.quiz_log(code))]
    revealed = [r for r in rows if r.answer is not None]
    return QuizSummary(
        questions=rows,
        asked=len(rows),
        answers=sum(r.answered for r in rows),
        right=sum(r.right or 0 for r in revealed),
        answers_revealed=sum(r.answered for r in revealed),
    )


def _cell(value: Any) -> str:
    """A CSV cell a spreadsheet shows as text: a leading =, +, -, @ (a formula) gets a quote mark."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


CSV_COLUMNS = ["question", "query", "asked", "answered", "right", "answer", "distribution", "words", "text"]


def summary_csv(s: QuizSummary) -> str:
    """One row per question: its number, the query, asked, answered, right (empty when never revealed),
    the right word, the distribution ("word: n" for every word, in order) and the question's text."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for r in s.questions:
        distribution = "; ".join(f"{w}: {n}" for w, n in zip(r.tokens, r.counts, strict=True))
        answer = "" if r.answer is None else r.tokens[r.answer]
        row = [r.number, r.query, r.asked, r.answered, r.right, answer, distribution, len(r.tokens), r.question]
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


async def vote(broker: Broker, code: str, sub: Subscriber, body: Any) -> str:
    """Count a follower's vote; the answer for its socket."""

    def error(kind: str, msg: str) -> str:
        return json.dumps({"error": {"type": kind, "msg": msg}})

    choice = body.get("choice") if isinstance(body, dict) else None
    if type(choice) is not int or not isinstance(body.get("quiz"), str):  # true/false are no word index
        return error("vote", 'a vote is {"quiz": id, "choice": word index, "seat": optional earlier seat}')
    quiz = await broker.quiz(code)
    if quiz is None or quiz["id"] != body["quiz"]:
        return error("no_quiz", "that quiz is over")
    if "answer" in quiz:
        return error("revealed", "the answer is out: votes are closed")
    if not 0 <= choice < len(quiz["tokens"]):
        return error("vote", f"choice must be a word index from 0 to {len(quiz['tokens']) - 1}")
    voters = sub.voters(code, body.get("seat"))  # a page that reconnects sends its earlier seat: one vote
    if not await broker.add_vote(code, quiz["id"], voters, choice):
        return error("voted", "you have voted in this quiz already")
    await broker.publish(code, await _answered(broker, code, quiz), presenters_only=True)
    return json.dumps({"voted": {"quiz": quiz["id"], "choice": choice}})
