"""The class report: what the class answered, question by question, for each lesson a room runs.

A finished question becomes an entry (entry()): where it was asked (chapter, step), its text and
options, the right option(s) the server computed, how many were in the room, how many answered,
how many were right, the counts per option and how long the answers took. The report of a run
(a room's class, and the saved lesson it played, if any) is its entries in order; rows() adds
the percentages, the most common wrong answer and, for a question asked more than once (the same
text and options: before and after a chapter), the change from the first time to the last.

Reports are kept in the classroom's database (table class_reports, app.classroom.store migration
6), one row per run, written as each question ends, so they outlive the room. Reports(db) reads and
writes them; csv_text() and the page's printable sheet show the same rows.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.classroom.database import Database


def _counts(options: Sequence[str], votes: Sequence[tuple[int, float]]) -> list[int]:
    counts = [0] * len(options)
    for choice, _ in votes:
        if 0 <= choice < len(counts):
            counts[choice] += 1
    return counts


def entry(quiz: dict[str, Any], votes: Sequence[tuple[int, float]], followers: int, now: float) -> dict[str, Any]:
    """A question that ended, as the report keeps it (votes: (choice, seconds after the question))."""
    answer = quiz.get("answer") or quiz.get("secret") or {}
    counts = _counts(quiz["options"], votes)
    right = [int(i) for i in answer.get("right", [])]
    seconds = [s for _, s in votes]
    return {
        "id": quiz["id"],
        "question": quiz["question"],
        "chapter": quiz.get("chapter", ""),
        "step": quiz.get("step", ""),
        "kind": quiz.get("kind", "word"),
        "text": quiz.get("text", ""),
        "options": list(quiz["options"]),
        "grid": quiz.get("grid"),
        "right": right,
        "value": answer.get("value"),
        "explain": answer.get("explain", ""),
        "revealed": "answer" in quiz,
        "in_room": max(int(quiz.get("asked", 0)), followers, len(votes)),
        "answered": len(votes),
        "correct": sum(counts[i] for i in right if 0 <= i < len(counts)),
        "counts": counts,
        "median_seconds": round(statistics.median(seconds), 1) if seconds else None,
        "asked_at": quiz.get("at"),
        "ended_at": round(now, 3),
        "lesson": quiz.get("lesson"),
    }


def _same(e: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    """Two asks are the same question when their id, text and options are (before and after a chapter)."""
    return e["question"], e["text"], tuple(e["options"])


def percent(e: dict[str, Any]) -> float | None:
    return None if not e["answered"] else round(100 * e["correct"] / e["answered"], 1)


def rows(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The report's rows: each entry with its number, % right, most common wrong answer, and pre/post."""
    out = []
    firsts: dict[tuple[str, str, tuple[str, ...]], int] = {}
    lasts: dict[tuple[str, str, tuple[str, ...]], int] = {}
    for i, e in enumerate(entries):
        firsts.setdefault(_same(e), i)
        lasts[_same(e)] = i
    for i, e in enumerate(entries):
        wrong = [(n, j) for j, n in enumerate(e["counts"]) if j not in e["right"] and n > 0]
        n_wrong, j_wrong = max(wrong, key=lambda w: (w[0], -w[1])) if wrong else (0, -1)
        key = _same(e)
        pre_post = ""
        change = None
        if firsts[key] != lasts[key]:
            if i == firsts[key]:
                pre_post = "pre"
            elif i == lasts[key]:
                pre_post = "post"
                before, after = percent(entries[firsts[key]]), percent(e)
                change = None if before is None or after is None else round(after - before, 1)
        out.append(
            {
                **e,
                "number": i + 1,
                "percent_right": percent(e),
                "answer_text": " / ".join(e["options"][j] for j in e["right"][:3]) + (" …" * (len(e["right"]) > 3)),
                "common_wrong": e["options"][j_wrong] if j_wrong >= 0 else "",
                "common_wrong_count": n_wrong,
                "pre_post": pre_post,
                "change": change,
            }
        )
    return out


def totals(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    answered = sum(e["answered"] for e in entries)
    correct = sum(e["correct"] for e in entries)
    return {
        "questions": len(entries),
        "answers": answered,
        "correct": correct,
        "percent_right": None if not answered else round(100 * correct / answered, 1),
    }


def _cell(value: Any) -> str:
    """A CSV cell a spreadsheet shows as text: a leading =, +, -, @ (a formula) gets a quote mark."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


CSV_COLUMNS = [
    "number", "chapter", "step", "question", "kind", "in_room", "answered", "right", "percent_right", "answer",
    "most_common_wrong", "most_common_wrong_count", "median_seconds", "revealed", "pre_post", "change",
    "distribution", "text",
]  # fmt: skip


def csv_text(entries: Sequence[dict[str, Any]]) -> str:
    """One row per question (CSV_COLUMNS); the distribution is "option: n" for every option, in order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for r in rows(entries):
        distribution = "; ".join(f"{o}: {n}" for o, n in zip(r["options"], r["counts"], strict=True))
        writer.writerow(
            [
                _cell(v)
                for v in (
                    r["number"], r["chapter"], r["step"], r["question"], r["kind"], r["in_room"], r["answered"],
                    r["correct"], r["percent_right"], r["answer_text"], r["common_wrong"], r["common_wrong_count"],
                    r["median_seconds"], "yes" if r["revealed"] else "no", r["pre_post"], r["change"],
                    distribution, r["text"],
                )
            ]
        )  # fmt: skip
    return out.getvalue()


# ---- kept in the database ----------------------------------------------------------------------

MIGRATION = [
    """CREATE TABLE class_reports (
        id {id},
        run TEXT NOT NULL,
        room TEXT NOT NULL,
        lesson_id BIGINT NOT NULL,
        lesson_title TEXT NOT NULL,
        started TEXT NOT NULL,
        updated TEXT NOT NULL,
        question_count INTEGER NOT NULL,
        questions TEXT NOT NULL
    )""",
    "CREATE UNIQUE INDEX class_reports_by_run ON class_reports (run, lesson_id)",
    "CREATE INDEX class_reports_by_lesson ON class_reports (lesson_id, id)",
]
NO_LESSON = 0  # lesson_id of the questions asked while no saved lesson played


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Reports:
    """The class reports of one database (SQLite or PostgreSQL)."""

    db: Database

    def add(self, run: str, room: str, question: dict[str, Any]) -> int:
        """Append a finished question to its run's report (made on its first question); the report's id."""
        lesson = question.get("lesson") or {}
        lesson_id = int(lesson.get("id") or NO_LESSON)
        title = str(lesson.get("title") or "")
        now = _now()
        with self.db.transaction() as do:
            found = do("SELECT id, questions FROM class_reports WHERE run = ? AND lesson_id = ?", (run, lesson_id))
            if found:
                report_id, kept = int(found[0][0]), json.loads(found[0][1])
                kept.append(question)
                do(
                    "UPDATE class_reports SET questions = ?, question_count = ?, updated = ? WHERE id = ?",
                    (json.dumps(kept, ensure_ascii=False), len(kept), now, report_id),
                )
                return report_id
            made = do(
                "INSERT INTO class_reports (run, room, lesson_id, lesson_title, started, updated, question_count,"
                " questions) VALUES (?, ?, ?, ?, ?, ?, 1, ?) RETURNING id",
                (run, room, lesson_id, title, now, now, json.dumps([question], ensure_ascii=False)),
            )
            return int(made[0][0])

    def listed(self, *, lesson_id: int | None = None, run: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
        """Reports newest first (no questions): of one saved lesson (0: none), of one room's run, or all."""
        where: list[str] = []
        args: list[int | str] = []
        if lesson_id is not None:
            where.append("lesson_id = ?")
            args.append(lesson_id)
        if run is not None:
            where.append("run = ?")
            args.append(run)
        sql = "SELECT id, room, lesson_id, lesson_title, started, updated, question_count FROM class_reports"
        if where:
            sql += " WHERE " + " AND ".join(where)
        found = self.db.rows(sql + " ORDER BY id DESC LIMIT ?", (*args, limit))
        keys = ("id", "room", "lesson_id", "lesson_title", "started", "updated", "questions")
        out = [dict(zip(keys, row, strict=True)) for row in found]
        for r in out:
            r["id"], r["questions"], r["lesson_id"] = int(r["id"]), int(r["questions"]), int(r["lesson_id"]) or None
        return out

    def get(self, report_id: int) -> dict[str, Any] | None:
        found = self.db.rows(
            "SELECT id, room, lesson_id, lesson_title, started, updated, questions FROM class_reports WHERE id = ?",
            (report_id,),
        )
        if not found:
            return None
        i, room, lesson_id, title, started, updated, kept = found[0]
        entries = json.loads(kept)
        return {
            "id": int(i),
            "room": room,
            "lesson_id": int(lesson_id) or None,
            "lesson_title": title,
            "started": started,
            "updated": updated,
            "rows": rows(entries),
            "totals": totals(entries),
            "entries": entries,
        }
