"""Routes of saved lessons (teacher token for all of them: students get the views through the room).

POST   /api/lessons                 {title, views} → 201 {id}
GET    /api/lessons?offset&limit    one page of summaries {id, title, views (a count), updated}, in the teacher's order
PUT    /api/lessons/order           {ids} → 204: these lessons in this order, in the places they held
GET    /api/lessons/{id}            the lesson with its views
PUT    /api/lessons/{id}            {title, views} → 204 (edit: rename, notes, views moved or removed)
DELETE /api/lessons/{id}            → 204

While the database can't be reached (a PostgreSQL server that went away) every route answers 503
with a message that says so; rooms keep working, and lessons come back when the database does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from fastapi import APIRouter, Path, Query, Request, Response

from app.classroom import limits
from app.classroom.database import Unavailable
from app.classroom.schemas import Lesson, LessonCreated, LessonIn, LessonOrder, LessonSummary
from app.classroom.service import classroom
from app.classroom.store import Store
from app.errors import ClientError
from app.web import auth as web_auth
from app.web.http import body_doc, error_docs, json_body

router = APIRouter(prefix="/api", tags=["lessons"])
log = logging.getLogger(__name__)
R = TypeVar("R")

_AUTH = error_docs(401, 403)
_BAD = error_docs(413, 415, 422)
_LESSON = error_docs(s404="No such lesson.")
_DOWN = error_docs(s503="The lesson database can't be reached now (rooms keep working).")
LessonId = Path(ge=1, le=2**62, description="the lesson's id")


async def _store(request: Request, work: Callable[[Store], R]) -> R:
    """work(store) on a worker thread; 503 while the database is away."""
    try:
        return await anyio.to_thread.run_sync(lambda: work(classroom(request.app).store))
    except Unavailable as e:
        log.warning("lessons: %s", e)
        msg = (
            "the lesson database can't be reached right now: saved lessons come back when it does (rooms keep working)"
        )
        raise ClientError(503, ["server", "database"], msg, "database_unavailable") from None


def _no_lesson(lesson_id: int) -> ClientError:
    return ClientError(404, ["path", "lesson_id"], f"no lesson {lesson_id}", "no_lesson")


def _views(body: LessonIn) -> list[dict[str, Any]]:
    return [{"state": v.state.plain(), "note": v.note} for v in body.views]


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
    body = await json_body(request, LessonIn, limits.MAX_LESSON_BYTES)
    if await _store(request, Store.count_lessons) >= limits.MAX_LESSONS:
        raise ClientError(429, ["body"], f"{limits.MAX_LESSONS} lessons are saved: delete one first", "lesson_limit")
    return LessonCreated(id=await _store(request, lambda s: s.add_lesson(body.title, _views(body))))


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
    "/lessons/{lesson_id}", response_model=Lesson, summary="One lesson", responses={**_AUTH, **_LESSON, **_DOWN}
)
async def get_lesson(request: Request, lesson_id: int = LessonId) -> dict[str, Any]:
    web_auth.require_teacher(request)
    lesson = await _store(request, lambda s: s.lesson(lesson_id))
    if lesson is None:
        raise _no_lesson(lesson_id)
    return lesson


@router.put(
    "/lessons/{lesson_id}",
    status_code=204,
    summary="Replace a lesson (its title, its views' notes and order, views removed)",
    responses={**_AUTH, **_LESSON, **_BAD, **_DOWN},
    openapi_extra=body_doc(LessonIn),
)
async def replace_lesson(request: Request, lesson_id: int = LessonId) -> Response:
    web_auth.require_teacher(request)
    body = await json_body(request, LessonIn, limits.MAX_LESSON_BYTES)
    if not await _store(request, lambda s: s.replace_lesson(lesson_id, body.title, _views(body))):
        raise _no_lesson(lesson_id)
    return Response(status_code=204)


@router.delete(
    "/lessons/{lesson_id}", status_code=204, summary="Delete a lesson", responses={**_AUTH, **_LESSON, **_DOWN}
)
async def delete_lesson(request: Request, lesson_id: int = LessonId) -> Response:
    web_auth.require_teacher(request)
    if not await _store(request, lambda s: s.delete_lesson(lesson_id)):
        raise _no_lesson(lesson_id)
    return Response(status_code=204)
