"""The live quiz: a question about the class's current view, one vote per seat, the answer the server computed.

Asking: the presenter names a question (app.classroom.questions); the server reads the room's
current view, computes the question and its right answer from the chapter's own numbers, and
keeps the answer to itself. Every page gets the question (its text and options), never the answer.

Voting: a follower's socket votes {"quiz", "choice"} (choice: the option's index, an integer).
A vote counts once per seat (the signed id the room gives each page, kept by the page, so a page
that reconnects keeps its one vote); one address may seat at most limits.seats_per_address() voters
in a room (30 phones behind a school's NAT all count; one laptop cannot stuff the box). Every vote
is answered on its socket: {"voted": {"quiz", "choice"}} or {"error": {"type", "msg"}} with the
reason (the answer is out, this page has voted, too many seats behind this address, …).
Until the reveal nobody sees the counts: the presenters hear only how many have answered.

Revealing: the server adds the answer and the counts to the quiz; every page sees them, and each
phone's verdict comes from the vote the server confirmed to it (its `voted`, or on reconnecting
its hello's "yours"), so it always agrees with the counts.

Every question that ends (revealed, ended, or replaced by the next) joins the room's quiz log and
the class report (app.classroom.report, kept in the database).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import anyio

from app.classroom import limits, questions, report
from app.classroom.broker import Broker, Subscriber, public_quiz
from app.classroom.schemas import QuizStart
from app.errors import ClientError

log = logging.getLogger(__name__)
Keep = Callable[[str, str, dict[str, Any]], None]  # keep(run, room, entry): a finished question into the class report


async def _answered(broker: Broker, code: str, quiz: dict[str, Any]) -> str:
    answered = len(await broker.votes(code, quiz["id"]))
    return json.dumps({"votes": {"id": quiz["id"], "answered": answered}})


def counts_of(quiz: dict[str, Any], votes: list[tuple[int, float]]) -> list[int]:
    counts = [0] * len(quiz["options"])
    for choice, _ in votes:
        if 0 <= choice < len(counts):
            counts[choice] += 1
    return counts


async def _finish(broker: Broker, code: str, quiz: dict[str, Any], keep: Keep | None) -> None:
    """Log a question that ended (once: when revealed, or when it ends unrevealed)."""
    votes = await broker.votes(code, quiz["id"])
    entry = report.entry(quiz, votes, await broker.followers(code), time.time())
    await broker.log_quiz(code, entry)
    if keep is not None:
        run = await broker.run(code)
        try:
            await anyio.to_thread.run_sync(keep, run, code, entry)
        except Exception as e:  # the database away: the room's log still has it; say so once
            log.warning("classroom: question %s of room %s not kept in the class report (%s)", quiz["id"], code, e)


async def start(broker: Broker, code: str, body: QuizStart, models: questions.Models, keep: Keep | None = None) -> str:
    """Ask the question `body.question` about the room's current view; its id."""
    question = questions.QUESTIONS.get(body.question)
    if question is None:
        raise ClientError(422, ["body", "question"], f"no question {body.question[:60]!r}", "unknown_question")
    state_text, _ = await broker.state(code)
    if state_text is None:
        raise ClientError(409, ["path", "code"], "the room shows nothing yet: send a view first", "no_view")
    state = json.loads(state_text)
    try:
        asked = await anyio.to_thread.run_sync(question.ask, state, models)
    except questions.NotAskable as e:
        raise ClientError(409, ["body", "question"], str(e), "not_askable") from None
    previous = await broker.quiz(code)
    if previous is not None and "answer" not in previous:
        await _finish(broker, code, previous, keep)
    deck = await broker.deck(code)
    quiz: dict[str, Any] = {
        "id": uuid.uuid4().hex[:12],
        "question": question.id,
        "chapter": question.chapter,
        "step": state.get("step", ""),
        **asked.public(),
        "asked": await broker.followers(code),
        "at": round(time.time(), 3),
        "lesson": None if deck is None else {"id": deck.get("lesson"), "title": deck.get("title", "")},
        "secret": asked.answer(),  # never leaves the server before the reveal (broker.public_quiz)
    }
    await broker.set_quiz(code, quiz)
    await broker.publish(code, json.dumps({"quiz": public_quiz(quiz)}))
    await broker.publish(code, await _answered(broker, code, quiz), presenters_only=True)
    return str(quiz["id"])


async def reveal(broker: Broker, code: str, keep: Keep | None = None) -> dict[str, Any]:
    """Show every page the answer the server computed, and the counts."""
    quiz = await broker.quiz(code)
    if quiz is None:
        raise ClientError(409, ["path", "code"], "no quiz is running in this room", "no_quiz")
    if "answer" in quiz:
        raise ClientError(409, ["path", "code"], "this quiz's answer is out already", "revealed")
    votes = await broker.votes(code, quiz["id"])
    quiz = {**quiz, "answer": quiz["secret"], "counts": counts_of(quiz, votes)}
    await broker.set_quiz(code, quiz)
    shown = public_quiz(quiz)
    await broker.publish(code, json.dumps({"quiz": shown}))
    await _finish(broker, code, quiz, keep)
    return shown


async def end(broker: Broker, code: str, keep: Keep | None = None) -> None:
    quiz = await broker.quiz(code)
    if quiz is not None and "answer" not in quiz:
        await _finish(broker, code, quiz, keep)
    await broker.set_quiz(code, None)
    await broker.publish(code, '{"quiz":null}')


async def reset(broker: Broker, code: str) -> None:
    """A fresh start for the room: no quiz running, an empty log (the view stays; kept reports stay)."""
    await broker.set_quiz(code, None)
    await broker.log_quiz(code, None)
    await broker.new_run(code)  # a new class: its questions go to a new report
    await broker.publish(code, '{"quiz":null}')


def _error(kind: str, msg: str, **extra: Any) -> str:
    """A refusal: its type (each page words it in its language: quiz.refused.<type>), English words, and
    what those words need (seat_cap: `most`)."""
    return json.dumps({"error": {"type": kind, "msg": msg, **extra}})


async def vote(broker: Broker, code: str, sub: Subscriber, body: Any) -> str:
    """Count a follower's vote; the answer for its socket (its vote, or why it was refused)."""
    if not isinstance(body, dict) or not isinstance(body.get("quiz"), str):
        return _error("vote", 'a vote is {"quiz": id, "choice": the option\'s number}')
    choice = body.get("choice")
    if not isinstance(choice, int) or isinstance(choice, bool):
        return _error("vote", "choice must be the option's number (an integer)")
    quiz = await broker.quiz(code)
    if quiz is None or quiz["id"] != body["quiz"]:
        return _error("no_quiz", "That question is over: your answer was not counted.")
    if "answer" in quiz:
        return _error("revealed", "Too late: the answer is out, so this vote was not counted.")
    if not 0 <= choice < len(quiz["options"]):
        return _error("vote", f"choice must be an option's number, 0 to {len(quiz['options']) - 1}")
    seat = sub.seat_for_vote(code, body.get("seat"))
    most = limits.seats_per_address()
    if sub.address and not await broker.take_seat(code, sub.address, seat, most):
        msg = f"Not counted: {most} phones on this network answer in this room already (the teacher can raise it)."
        return _error("seat_cap", msg, most=most)
    voters = ["seat:" + seat]
    if limits.one_vote_per_address() and sub.address:
        voters.append("address:" + sub.address)
    seconds = max(0.0, time.time() - float(quiz.get("at", time.time())))
    if not await broker.add_vote(code, quiz["id"], voters, choice, seconds):
        mine = await broker.vote_of(code, quiz["id"], seat)
        if mine is None:
            return _error("voted", "Not counted: this network address has answered already (one vote per address).")
        error = {"type": "voted", "msg": "You have answered this question already.", "quiz": quiz["id"], "choice": mine}
        return json.dumps({"error": error})
    await broker.publish(code, await _answered(broker, code, quiz), presenters_only=True)
    return json.dumps({"voted": {"quiz": quiz["id"], "choice": choice}})
