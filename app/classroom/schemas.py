"""The classroom's typed bodies: a view state (the page's URL state), rooms, the quiz, lessons."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.classroom import limits

_ID = r"^[a-z0-9][a-z0-9_-]{0,39}$"
_EXTRA_KEY = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
# never part of a view: the tab's secrets and the classroom's own switches
_RESERVED = {"key", "room", "present", "presenter_key"}
# a short number named `token` (an index) is harmless; a teacher token (≥ 16 characters) never passes
_TOKEN_INDEX = re.compile(r"^\d{0,4}$")
_MATRIX = Annotated[str, Field(max_length=4000, description="rows joined by ';', numbers by ',' (as in the URL)")]


class ViewState(BaseModel):
    """What the page shows, as the parameters of its address bar (strings, as there; numbers are accepted).

    Named fields are the attention view's (static/js/state.js); a chapter's own parameters
    (e.g. `dk` of the scaling chapter) ride along as extra string fields: lower-case names of at most
    32 characters, values of at most MAX_PARAM_CHARS, at most MAX_STATE_EXTRAS of them. `token` may only
    be a short number (an index), so a teacher token can never ride along.
    """

    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True, str_strip_whitespace=False)

    chapter: str | None = Field(None, pattern=_ID, description="the lesson's chapter id")
    example: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,80}$", description="a built-in example's id")
    sentence: str | None = Field(None, min_length=1, max_length=4000, description="a sentence for the real model")
    step: str | None = Field(None, pattern=_ID, description="the step's id (score, scale, mask, softmax, mix, …)")
    mask: Literal["full", "causal"] | None = None
    focus: str | None = Field(None, pattern=r"^\d{1,3}$", description="0-based index of the focused query")
    layer: str | None = Field(None, pattern=r"^(\d{1,2}|mean)$")
    head: str | None = Field(None, pattern=r"^(\d{1,2}|mean)$")
    merge: Literal["0", "1"] | None = None
    tokens: str | None = Field(None, max_length=8000, description="JSON array of the edited token labels")
    q: _MATRIX | None = None
    k: _MATRIX | None = None
    v: _MATRIX | None = None
    screen: Literal["blank", "hidden"] | None = Field(
        None, description="the projector's B (blank) or H (numbers hidden): every follower's page does the same"
    )

    @model_validator(mode="after")
    def _extras(self) -> ViewState:
        extra = self.model_extra or {}
        if len(extra) > limits.MAX_STATE_EXTRAS:
            raise ValueError(f"at most {limits.MAX_STATE_EXTRAS} chapter parameters, not {len(extra)}")
        for name, value in extra.items():
            if name in _RESERVED or (name == "token" and not _TOKEN_INDEX.match(str(value))):
                raise ValueError(f"{name!r} is not part of a view (a secret or a classroom switch)")
            if not _EXTRA_KEY.match(name):
                raise ValueError(f"parameter {name[:40]!r}: names are lower-case letters, digits and _, ≤ 32")
            if isinstance(value, int | float) and not isinstance(value, bool):
                value = str(value)
                extra[name] = value
            if not isinstance(value, str) or len(value) > limits.MAX_PARAM_CHARS:
                raise ValueError(f"parameter {name!r}: a string of at most {limits.MAX_PARAM_CHARS} characters")
        return self

    def plain(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class CreatedRoom(BaseModel):
    code: str = Field(description="the room's code: 6 letters and digits, easy to read aloud")
    presenter_key: str = Field(description="the secret that drives the room (keep it in the presenter's tab)")
    join_url: str = Field(description="the address followers open (also drawn as a QR code)")


class RoomReopen(BaseModel):
    model_config = ConfigDict(extra="forbid")
    presenter_key: str = Field(
        pattern=r"^[A-Za-z0-9_-]{32,64}$", description="the room's presenter key, as POST /api/rooms gave it"
    )


class ReopenedRoom(BaseModel):
    code: str = Field(description="the room's code, as it was")
    join_url: str = Field(description="the address followers open (also drawn as a QR code)")


class RoomInfo(BaseModel):
    state: dict[str, Any] | None = Field(description="the presenter's current view state (null before the first)")
    followers: int
    presenters: int = Field(0, description="presenter sockets (the teacher's page) connected now")


class QuizStart(BaseModel):
    """Ask the class a question about the room's current view; the server computes its answer."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(
        max_length=80, pattern=r"^[a-z][a-z0-9_.-]*$", description="a question's id (GET /api/questions)"
    )


class QuizCreated(BaseModel):
    id: str


class QuestionInfo(BaseModel):
    id: str
    chapter: str
    steps: list[str] = Field(description="the steps of the chapter it may be asked at")
    kind: Literal["word", "range", "number", "cell"]
    title: str


class Deck(BaseModel):
    """The saved lesson the teacher's windows are playing (presenters only: notes never reach a phone)."""

    model_config = ConfigDict(extra="forbid")
    lesson: int | None = Field(None, ge=1, le=2**62, description="the saved lesson's id (null: none)")
    title: str = Field("", max_length=limits.MAX_LESSON_TITLE)
    index: int = Field(0, ge=0, lt=limits.MAX_LESSON_VIEWS, description="the view shown, from 0")
    count: int = Field(0, ge=0, le=limits.MAX_LESSON_VIEWS)


class ReportRow(BaseModel):
    """One question of a class report (app.classroom.report)."""

    number: int = Field(description="1 for the first question")
    id: str
    question: str = Field(description="the question's id")
    chapter: str
    step: str
    kind: str
    text: str
    options: list[str]
    grid: dict[str, list[str]] | None = Field(None, description="a cell question's rows and cols")
    right: list[int] = Field(description="the right options (the server's answer)")
    value: float | None = Field(description="the number behind the answer")
    explain: str
    revealed: bool
    in_room: int = Field(description="followers in the room (at least those who answered)")
    answered: int
    correct: int
    percent_right: float | None
    answer_text: str
    common_wrong: str = Field(description="the most common wrong answer ('' when none)")
    common_wrong_count: int
    counts: list[int] = Field(description="answers per option, in order")
    median_seconds: float | None = Field(description="the median time to answer, from the question")
    pre_post: Literal["", "pre", "post"] = Field(description="the first / last time the same question was asked")
    change: float | None = Field(description="post only: % right now minus % right the first time")
    asked_at: float | None
    ended_at: float
    lesson: dict[str, Any] | None


class ReportTotals(BaseModel):
    questions: int
    answers: int
    correct: int
    percent_right: float | None


class RoomReport(BaseModel):
    """The room's questions so far (its current class): rows and totals."""

    rows: list[ReportRow]
    totals: ReportTotals


class ReportSummary(BaseModel):
    id: int
    room: str
    lesson_id: int | None
    lesson_title: str
    started: str
    updated: str
    questions: int


class Report(BaseModel):
    id: int
    room: str
    lesson_id: int | None
    lesson_title: str
    started: str
    updated: str
    rows: list[ReportRow]
    totals: ReportTotals


# what a title or a note may not hold: control characters (NUL, ESC, DEL, the C1 block) and the
# bidirectional overrides and isolates, which make text read differently from what it stores
_NEVER = frozenset(map(chr, [*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]))


def plain_text(value: str, allowed: str) -> str:
    """The text, unless it holds one of _NEVER other than `allowed` (ValueError naming the first one)."""
    for i, char in enumerate(value):
        if char in _NEVER and char not in allowed:
            kind = "a control character" if ord(char) < 0x2000 else "a direction override"
            raise ValueError(f"{kind} (U+{ord(char):04X}) at character {i + 1}: write plain text")
    return value


class LessonView(BaseModel):
    model_config = ConfigDict(extra="forbid")
    state: ViewState
    note: str = Field("", max_length=limits.MAX_NOTE_CHARS, description="plain text: tabs and new lines allowed")

    @field_validator("note")
    @classmethod
    def _plain_note(cls, note: str) -> str:
        return plain_text(note, "\t\n")


class LessonIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(
        min_length=1, max_length=limits.MAX_LESSON_TITLE, description="one line of plain text, not only spaces"
    )
    views: list[LessonView] = Field(min_length=1, max_length=limits.MAX_LESSON_VIEWS)

    @field_validator("title")
    @classmethod
    def _plain_title(cls, title: str) -> str:
        if not title.strip():
            raise ValueError("a title needs at least one character that is not a space")
        return plain_text(title, "\t")


class LessonCreated(BaseModel):
    id: int


class LessonOrder(BaseModel):
    """Lessons in a new order: they take the places they held among the others, in this order."""

    model_config = ConfigDict(extra="forbid")
    ids: list[Annotated[int, Field(ge=1, le=2**62)]] = Field(min_length=1, max_length=limits.MAX_LESSONS)

    @field_validator("ids")
    @classmethod
    def _each_once(cls, ids: list[int]) -> list[int]:
        if len(set(ids)) != len(ids):
            raise ValueError("each lesson id at most once")
        return ids


class LessonSummary(BaseModel):
    id: int
    title: str
    views: int
    updated: str


class Lesson(BaseModel):
    id: int
    title: str
    views: list[dict[str, Any]]
    updated: str
    version: int = Field(description="one more at each change; the ETag is this number in quotes (send it as If-Match)")
