"""The live quiz: "which word will this query attend to most?" One vote per follower, counted here.

The presenter asks (the tokens and the focused query), the followers tap a word (one vote per
seat and, by default, per address: broker.Subscriber.voters), the presenter sees the counts live,
then reveals the answer: the argmax of the focused query's weights, which the presenter's page reads
from the server's answer. Every follower then sees the answer and the counts, and its page says
whether it was right.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from app.classroom.broker import Broker, Subscriber
from app.classroom.schemas import QuizStart
from app.errors import ClientError


async def start(broker: Broker, code: str, body: QuizStart) -> str:
    quiz = {"id": uuid.uuid4().hex[:12], "question": body.question, "tokens": body.tokens, "focus": body.focus}
    await broker.set_quiz(code, quiz)
    await broker.publish(code, json.dumps({"quiz": quiz}))
    await broker.publish(code, json.dumps({"votes": await broker.vote_counts(code, quiz)}), presenters_only=True)
    return str(quiz["id"])


async def reveal(broker: Broker, code: str, answer: int) -> dict[str, Any]:
    quiz = await broker.quiz(code)
    if quiz is None:
        raise ClientError(409, ["path", "code"], "no quiz is running in this room", "no_quiz")
    if answer >= len(quiz["tokens"]):
        msg = f"answer {answer} is past the last of the quiz's {len(quiz['tokens'])} words"
        raise ClientError(422, ["body", "answer"], msg, "out_of_range")
    quiz = {**quiz, "answer": answer, "counts": (await broker.vote_counts(code, quiz))["counts"]}
    await broker.set_quiz(code, quiz)
    await broker.publish(code, json.dumps({"quiz": quiz}))
    return quiz


async def end(broker: Broker, code: str) -> None:
    await broker.set_quiz(code, None)
    await broker.publish(code, '{"quiz":null}')


async def vote(broker: Broker, code: str, sub: Subscriber, body: Any) -> str:
    """Count a follower's vote; the answer for its socket."""

    def error(kind: str, msg: str) -> str:
        return json.dumps({"error": {"type": kind, "msg": msg}})

    if not isinstance(body, dict) or not isinstance(body.get("choice"), int) or not isinstance(body.get("quiz"), str):
        return error("vote", 'a vote is {"quiz": id, "choice": word index, "seat": optional earlier seat}')
    quiz = await broker.quiz(code)
    if quiz is None or quiz["id"] != body["quiz"]:
        return error("no_quiz", "that quiz is over")
    if "answer" in quiz:
        return error("revealed", "the answer is out: votes are closed")
    choice = body["choice"]
    if not 0 <= choice < len(quiz["tokens"]):
        return error("vote", f"choice must be a word index from 0 to {len(quiz['tokens']) - 1}")
    voters = sub.voters(code, body.get("seat"))  # a page that reconnects sends its earlier seat: one vote
    if not await broker.add_vote(code, quiz["id"], voters, choice):
        return error("voted", "you have voted in this quiz already")
    await broker.publish(code, json.dumps({"votes": await broker.vote_counts(code, quiz)}), presenters_only=True)
    return json.dumps({"voted": {"quiz": quiz["id"], "choice": choice}})
