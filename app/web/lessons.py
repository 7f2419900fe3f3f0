"""Routes of saved lessons (teacher token for all of them: students get the views through the room).

POST   /api/lessons                 {title, views} → 201 {id}
GET    /api/lessons?offset&limit    one page of summaries {id, title, views (a count), updated}, in the teacher's order
PUT    /api/lessons/order           {ids} → 204: these lessons in this order, in the places they held
GET    /api/lessons/{id}            the lesson with its views and version; ETag: "<version>"
PUT    /api/lessons/{id}            If-Match: "<version>", {title, views} → 204, ETag: the new version
                                    (428 without If-Match; 412 with the current ETag when the lesson
                                    changed since that version: the change is refused, never lost)
DELETE /api/lessons/{id}            → 204 (If-Match, when sent, must name the current version)

The database gets at most database.POOL_SIZE calls at once, on threads of their own: a database that
stops answering holds those and nothing else (static files, the page, rooms keep every other thread).
A call waits at most QUEUE_SECONDS for its turn. While the database can't be used each route answers
at once: 503 with Retry-After (not reachable, not answering, busy, read-only) or 507 (its disk is
full; nothing was saved). Rooms keep working, and lessons come back when the database does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from fastapi import APIRouter, Path, Query, Request, Response

from app.classroom import database, limits
from app.classroom.database import Full, ReadOnly, Unavailable
from app.classroom.schemas import Lesson, LessonCreated, LessonIn, LessonOrder, LessonSummary
from app.classroom.service import classroom
from app.classroom.store import LessonLimit, Stale, Store
from app.errors import ClientError
from app.web import auth as web_auth
from app.web.http import body_doc, error_docs, json_body, json_response

router = APIRouter(prefix="/api", tags=["lessons"])
log = logging.getLogger(__name__)
R = TypeVar("R")
QUEUE_SECONDS = 1.0  # a call's longest wait for its turn at the database (then 503: busy)

_AUTH = error_docs(401, 403)
_BAD = error_docs(413, 415, 422)
_LESSON = error_docs(s404="No such lesson.")
_DOWN = error_docs(
    s503="The lesson database can't be used now (not reachable, busy or read-only; Retry-After says when to "
    "try again). Rooms keep working.",
    s507="The disk that holds the lessons is full: nothing was saved.",
)
_VERSION = error_docs(
    s412="The lesson changed since the version If-Match names: nothing was saved; the ETag header is the "
    "current version.",
    s428="No If-Match header: send the ETag of the version the change was made from.",
)
LessonId = Path(ge=1, le=2**62, description="the lesson's id")


class _Turns:
    """Whose turn it is at the database: POOL_SIZE calls at once, each on a thread of its own."""

    def __init__(self) -> None:
        self.calls = anyio.CapacityLimiter(database.POOL_SIZE)
        self.threads = anyio.CapacityLimiter(database.POOL_SIZE)  # never short: a call holds a turn first


def _turns(app: Any) -> _Turns:
    turns: _Turns | None = getattr(app.state, "lesson_turns", None)
    if turns is None:
        turns = app.state.lesson_turns = _Turns()
    return turns


_said = ("", 0.0)  # the last message logged, and when: a database that is away is one line, not one per call


def _log_once(message: str) -> None:
    global _said
    if message != _said[0] or time.monotonic() - _said[1] > 60:
        log.warning("lessons: %s", message)
        _said = (message, time.monotonic())


def _unavailable(e: Unavailable) -> ClientError:
    _log_once(str(e))
    retry = {"retry-after": str(database.RETRY_SECONDS)}
    if isinstance(e, Full):
        msg = "the disk that holds the lessons is full: nothing was saved (rooms keep working)"
        return ClientError(507, ["server", "database"], msg, "database_full")
    if isinstance(e, ReadOnly):
        msg = "the lesson database is read-only right now: lessons can be opened but not saved (rooms keep working)"
        return ClientError(503, ["server", "database"], msg, "database_read_only", retry)
    msg = "the lesson database can't be reached right now: saved lessons come back when it does (rooms keep working)"
    return ClientError(503, ["server", "database"], msg, "database_unavailable", retry)


async def _store(request: Request, work: Callable[[Store], R]) -> R:
    """work(store) on a database thread, once it is this call's turn; 503/507 while the database can't be used."""
    turns = _turns(request.app)
    with anyio.move_on_after(QUEUE_SECONDS) as waiting:
        await turns.calls.acquire()
    if waiting.cancelled_caught:
        raise _unavailable(Unavailable(f"{database.POOL_SIZE} calls have held the lesson database for over a second"))
    try:
        return await anyio.to_thread.run_sync(lambda: work(classroom(request.app).store), limiter=turns.threads)
    except Unavailable as e:
        raise _unavailable(e) from None
    finally:
        turns.calls.release()


def _no_lesson(lesson_id: int) -> ClientError:
    return ClientError(404, ["path", "lesson_id"], f"no lesson {lesson_id}", "no_lesson")


def _views(body: LessonIn) -> list[dict[str, Any]]:
    return [{"state": v.state.plain(), "note": v.note} for v in body.views]


def etag(version: int) -> str:
    return f'"{version}"'


def if_match(request: Request, required: bool) -> set[int] | None:
    """The versions the request's If-Match names (None: `*`, or no header where none is required);
    428 when it is required and missing. A tag that is no version of ours (a weak one, a made-up
    one) names no version: the change is then refused with 412, as RFC 9110 says."""
    header = request.headers.get("if-match")
    if header is None:
        if not required:
            return None
        msg = (
            "send If-Match with the lesson's ETag (GET /api/lessons/{id} gives it): a change names the version it edits"
        )
        raise ClientError(428, ["header", "if-match"], msg, "if_match_required")
    tags = [t.strip() for t in header.split(",")]
    if "*" in tags:
        return None
    return {int(t[1:-1]) for t in tags if len(t) > 2 and t[0] == t[-1] == '"' and t[1:-1].isdigit()}


def _stale(e: Stale) -> ClientError:
    msg = (
        f"this lesson was changed elsewhere since the version you edited (it is at version {e.current} now):"
        f" reload it, or send If-Match: {etag(e.current)} to overwrite"
    )
    return ClientError(412, ["header", "if-match"], msg, "stale", {"etag": etag(e.current)})


@router.post(
    "/lessons",
    status_code=201,
    response_model=LessonCreated,
    summary="Save a lesson: a title and views, each with a note",
    responses={**_AUTH, **_BAD, **error_docs(s429=f"{limits.MAX_LESSONS} lessons are saved already."), **_DOWN},
    openapi_extra=body_doc(LessonIn),
)
async def create_lesson(request: Request) -> LessonCreated:
    web_auth.require_teacher(request)
    body = await json_body(request, LessonIn, limits.MAX_LESSON_BYTES, strict=False)  # its views' ViewState
    try:
        return LessonCreated(
            id=await _store(request, lambda s: s.add_lesson(body.title, _views(body), limits.MAX_LESSONS))
        )
    except LessonLimit:
        raise ClientError(
            429, ["body"], f"{limits.MAX_LESSONS} lessons are saved: delete one first", "lesson_limit"
        ) from None


@router.get(
    "/lessons",
    response_model=list[LessonSummary],
    summary="The saved lessons, one page at a time (summaries: the views are counted, not sent)",
    responses={**_AUTH, **_DOWN},
)
async def list_lessons(
    request: Request,
    offset: int = Query(0, ge=0, le=limits.MAX_LESSONS, description="lessons to skip"),
    limit: int = Query(limits.LESSONS_PAGE, ge=1, le=limits.MAX_LESSONS_PAGE, description="lessons in this page"),
) -> list[dict[str, Any]]:
    web_auth.require_teacher(request)
    return await _store(request, lambda s: s.lessons(offset, limit))


@router.put(
    "/lessons/order",
    status_code=204,
    summary="Reorder lessons: these ids, in this order, in the places they held",
    responses={**_AUTH, **_BAD, **error_docs(s404="One of the ids is no lesson."), **_DOWN},
    openapi_extra=body_doc(LessonOrder),
)
async def order_lessons(request: Request) -> Response:
    web_auth.require_teacher(request)
    body = await json_body(request, LessonOrder, 64 * 1024)
    missing = await _store(request, lambda s: s.order_lessons(body.ids))
    if missing:
        raise ClientError(404, ["body", "ids"], f"no lesson {missing[0]}", "no_lesson")
    return Response(status_code=204)


@router.get(
    "/lessons/{lesson_id}",
    response_model=Lesson,
    summary="One lesson (ETag: its version)",
    responses={**_AUTH, **_LESSON, **_DOWN},
)
async def get_lesson(request: Request, lesson_id: int = LessonId) -> Response:
    web_auth.require_teacher(request)
    lesson = await _store(request, lambda s: s.lesson(lesson_id))
    if lesson is None:
        raise _no_lesson(lesson_id)
    return json_response(lesson, headers={"etag": etag(lesson["version"]), "cache-control": "no-store"})


@router.put(
    "/lessons/{lesson_id}",
    status_code=204,
    summary="Replace a lesson (its title, its views' notes and order, views removed); If-Match: its ETag",
    responses={**_AUTH, **_LESSON, **_BAD, **_VERSION, **_DOWN},
    openapi_extra=body_doc(LessonIn),
)
async def replace_lesson(request: Request, lesson_id: int = LessonId) -> Response:
    web_auth.require_teacher(request)
    versions = if_match(request, required=True)
    body = await json_body(request, LessonIn, limits.MAX_LESSON_BYTES, strict=False)  # its views' ViewState
    try:
        version = await _store(request, lambda s: s.replace_lesson(lesson_id, body.title, _views(body), versions))
    except Stale as e:
        raise _stale(e) from None
    if version is None:
        raise _no_lesson(lesson_id)
    return Response(status_code=204, headers={"etag": etag(version)})


@router.delete(
    "/lessons/{lesson_id}",
    status_code=204,
    summary="Delete a lesson (If-Match, when sent, must name its current version)",
    responses={**_AUTH, **_LESSON, **error_docs(s412=_VERSION[412]["description"]), **_DOWN},
)
async def delete_lesson(request: Request, lesson_id: int = LessonId) -> Response:
    web_auth.require_teacher(request)
    versions = if_match(request, required=False)
    try:
        deleted = await _store(request, lambda s: s.delete_lesson(lesson_id, versions))
    except Stale as e:
        raise _stale(e) from None
    if not deleted:
        raise _no_lesson(lesson_id)
    return Response(status_code=204)
